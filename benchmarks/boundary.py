"""Crossing the boundary: ``freeze_deep`` vs ``copy.deepcopy`` vs a pickle round trip.

Payloads are JSON-like tool arguments (dicts of lists of dicts with str, int
and float values) of about 1 KB and 100 KB of JSON. Each operation runs in
timeit-style loops; loops of all contenders are interleaved, order rotated,
and the median per-operation time is reported. ``freeze_deep`` always gets the
plain (unfrozen) payload: it never mutates its input, and an already frozen
value would come back at once.
Run: ``python -m benchmarks.boundary``.
"""

from __future__ import annotations

import copy
import json
import pickle
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

from benchmarks._report import bar_chart, check, print_table, publish, quick_mode, rotated
from robotlab.parallel import FrozenDict, freeze_deep

SIZES = {"1 KB": 1_000, "100 KB": 100_000}  # label: JSON bytes
OPERATIONS: dict[str, Callable[[Any], Any]] = {
    "freeze_deep": freeze_deep,
    "copy.deepcopy": copy.deepcopy,
    "pickle round trip": lambda value: pickle.loads(pickle.dumps(value, 5)),
}


def slug(label: str) -> str:
    """``"100 KB"`` -> ``"100kb"``, for target and file names."""
    return label.replace(" ", "").lower()


def payload(json_bytes: int) -> dict:
    """Tool-call arguments whose JSON encoding is at least *json_bytes* long."""
    filters: list[dict] = []
    args = {"tool": "search_orders", "request_id": "req-7f3a9c", "args": {
        "query": "late deliveries in region north", "limit": 50, "score_min": 0.35,
        "filters": filters, "options": {"sort": "created_at", "descending": True, "fields": ["id", "status"]}}}
    size, i = len(json.dumps(args)), 0
    while size < json_bytes:
        item = {"field": f"attribute_{i}", "op": "eq", "value": i * 1.5, "weight": i % 10,
                "sources": [{"name": "crm", "rank": i, "score": 0.25}, {"name": "erp", "rank": i + 1, "score": 0.5}]}
        filters.append(item)
        size += len(json.dumps(item)) + 2
        i += 1
    return args


def per_op_times(value: Any, repeats: int, quick: bool) -> dict[str, list[float]]:
    """Per-operation seconds of each operation on *value*: *repeats* loops each, interleaved and rotated."""
    timers = {name: timeit.Timer(lambda op=op: op(value), timer=time.perf_counter) for name, op in OPERATIONS.items()}
    numbers = {name: 3 if quick else timer.autorange()[0] for name, timer in timers.items()}
    samples: dict[str, list[float]] = {name: [] for name in timers}
    for rep in range(repeats):
        for name in rotated(list(timers), rep):
            samples[name].append(timers[name].timeit(numbers[name]) / numbers[name])
    return samples


def main(quick: bool | None = None) -> dict:
    quick = quick_mode(quick)
    repeats = 2 if quick else 7
    figures: dict = {"benchmark": "boundary", "quick": quick, "repeats": repeats, "sizes": {}}
    rows = []
    for label, target in SIZES.items():
        value = payload(target)
        frozen = freeze_deep(value)
        assert type(frozen) is FrozenDict and type(value) is dict  # the input stays plain for every loop
        medians = {name: statistics.median(times) for name, times in per_op_times(value, repeats, quick).items()}
        base = medians["freeze_deep"]
        figures["sizes"][label] = {
            "json_bytes": len(json.dumps(value)), "median_s": medians,
            "deepcopy_to_freeze_deep": medians["copy.deepcopy"] / base,
            "pickle_to_freeze_deep": medians["pickle round trip"] / base,
        }
        rows += [[label, name, t * 1e6, t / base] for name, t in medians.items()]
        bar_chart(f"boundary_{slug(label)}", f"Per-operation time, {label} JSON-like payload (median)",
                  [(name, t * 1e6) for name, t in medians.items()], "us", quick)
    print(f"median per-operation time of {repeats} interleaved loops")
    print_table(["payload", "operation", "median (us)", "vs freeze_deep"], rows)
    for label in SIZES:
        check(figures, f"freeze_vs_deepcopy_{slug(label)}",
              figures["sizes"][label]["deepcopy_to_freeze_deep"], ">=", 5.0,
              f"deepcopy / freeze_deep time, {label}")
    publish("boundary", figures, quick)
    return figures


if __name__ == "__main__":
    main()
