"""Jobs for the knowledge tests' writer processes (importable by spawned children)."""

from __future__ import annotations

from robotlab.knowledge import KnowledgeStore


def write_entries(path: str, writer: int, count: int, start) -> None:
    """Record *count* entries of this writer and confirm one shared entry each time, into one domain."""
    store = KnowledgeStore(path)
    start.wait()
    for n in range(count):
        store.record(f"writer {writer} fact {n}", domain="Shared Domain", reasoning=f"from writer {writer}")
        store.record("The shared fact", domain="shared domain", reasoning="everyone")
