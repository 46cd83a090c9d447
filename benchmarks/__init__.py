"""Runnable benchmarks: ``python -m benchmarks`` runs them all; each prints a table and one JSON line."""
