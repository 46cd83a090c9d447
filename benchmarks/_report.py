"""Shared by the benchmarks: the interleaving order, a printed table, target checks, the results JSON, an SVG chart.

Quick mode (``ROBOTLAB_BENCH_QUICK=1`` or ``main(quick=True)``) runs tiny sizes
and writes nothing, so the test suite never overwrites the published figures.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from html import escape
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
IMAGES = Path(__file__).parent.parent / "docs" / "img"


def quick_mode(quick: bool | None) -> bool:
    """*quick* if given, else whether ``ROBOTLAB_BENCH_QUICK`` is set to a non-empty value other than ``0``."""
    if quick is not None:
        return quick
    return os.environ.get("ROBOTLAB_BENCH_QUICK", "") not in ("", "0")


def rotated(names: Sequence[str], rep: int) -> list[str]:
    """*names* rotated by *rep*: run contenders in this order in round *rep*, so none is always first or last."""
    return [*names[rep % len(names):], *names[:rep % len(names)]]


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print rows under headers; floats get four significant digits, the first column is left-aligned."""
    cells = [[f"{c:.4g}" if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    for row in [list(headers), *cells]:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))


def check(figures: dict, name: str, value: float, op: str, limit: float, text: str) -> None:
    """Record target *name* (``value op limit``, op ``">="`` or ``"<="``) in ``figures["targets"]`` and print it."""
    ok = value >= limit if op == ">=" else value <= limit
    figures.setdefault("targets", {})[name] = {"value": value, "op": op, "limit": limit, "pass": ok}
    print(f"{'PASS' if ok else 'FAIL'}  {text}: {value:.3g} (target {op} {limit:g})")


def publish(name: str, figures: dict, quick: bool) -> None:
    """Print *figures* as one JSON line and, unless *quick*, write ``benchmarks/results/NAME.json``."""
    line = json.dumps(figures)
    print(line)
    if not quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{name}.json").write_text(json.dumps(figures, indent=2) + "\n")


def bar_chart(name: str, title: str, bars: Sequence[tuple[str, float]], unit: str, quick: bool) -> None:
    """Unless *quick*, write ``docs/img/NAME.svg``: one horizontal bar per (label, value), scaled to the largest."""
    if quick:
        return
    label_w, bar_w, value_w, row_h, top = 290, 380, 110, 28, 40
    width, height = label_w + bar_w + value_w, top + row_h * len(bars) + 12
    biggest = max(value for _, value in bars) or 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="24" font-size="15" font-weight="bold">{escape(title)}</text>',
    ]
    for i, (label, value) in enumerate(bars):
        y = top + i * row_h
        length = max(1.0, bar_w * value / biggest)
        parts += [
            f'<text x="{label_w - 8}" y="{y + 17}" text-anchor="end">{escape(label)}</text>',
            f'<rect x="{label_w}" y="{y + 4}" width="{length:.1f}" height="{row_h - 8}" fill="#4472c4"/>',
            f'<text x="{label_w + length + 6:.1f}" y="{y + 17}">{value:.3g} {escape(unit)}</text>',
        ]
    parts.append("</svg>")
    IMAGES.mkdir(parents=True, exist_ok=True)
    (IMAGES / f"{name}.svg").write_text("\n".join(parts) + "\n")
