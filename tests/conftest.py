"""Suite-wide fixtures. Offline always: litellm must never fetch its cost map."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
