"""The ```python blocks of a docs page, for the tests that run every example a page shows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent.parent


def python_blocks(page: str) -> list[str]:
    """The code of every ```python block of *page* (a path from the repository root), in order."""
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)


def run_block(page: str, index: int, code: str | None = None, **namespace: Any) -> None:
    """Execute block *index* of *page* (or *code* made from it) in a fresh namespace; tracebacks name the block."""
    exec(compile(code if code is not None else python_blocks(page)[index], f"{page}[{index}]", "exec"), namespace)
