"""Run every benchmark module in this package."""

import importlib
import pkgutil

import benchmarks

for info in pkgutil.iter_modules(benchmarks.__path__):
    if not info.name.startswith("_"):
        importlib.import_module(f"benchmarks.{info.name}").main()
