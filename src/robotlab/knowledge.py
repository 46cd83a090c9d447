"""Durable knowledge: what robots learn, kept across sessions and processes (robot_lab ``Durable::Store``).

A :class:`KnowledgeStore` is a directory of JSON files, one per domain
(``billing.json`` for the domain ``"Billing"``), each a list of
:class:`KnowledgeEntry`: content, reasoning, category, domain, confidence and
use count. Recording content a domain already holds (compared without case)
*confirms* it instead: confidence rises by 0.1 (capped at 1.0) and the use
count by one. :meth:`KnowledgeStore.recall` finds entries by keywords (any
query word of three or more letters contained in the content or domain) at
or above a minimum confidence, most confident first.

Safe under concurrent writers, in threads and in any number of processes:
each write holds an exclusive ``fcntl.flock`` on the domain's lock file while
it reads, changes and rewrites the domain file, and the file is replaced
atomically (a temporary file, ``fsync``, ``os.replace``), so readers, who take
no lock, always see a whole file. POSIX only (``fcntl``). A file that is not
valid knowledge raises ``KnowledgeError`` naming it, and is never overwritten.
Standard library only.

Example:
    >>> import tempfile
    >>> store = KnowledgeStore(tempfile.mkdtemp())
    >>> store.record("Customers in the EU pay VAT on shipping", domain="billing", reasoning="invoice 42")
    KnowledgeEntry(content='Customers in the EU pay VAT on shipping', domain='billing', confidence=0.1, use_count=0)
    >>> store.record("customers in the EU pay VAT on shipping", domain="billing").confidence   # confirmed
    0.2
    >>> [e.content for e in store.recall("shipping costs", min_confidence=0.2)]
    ['Customers in the EU pay VAT on shipping']
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigurationError, KnowledgeError

__all__ = [
    "CONFIDENCE_INCREMENT", "DEFAULT_PATH", "KNOWLEDGE_STORE_KEY", "MAX_CONFIDENCE", "KnowledgeEntry", "KnowledgeStore",
]

DEFAULT_PATH = Path.home() / ".robotlab" / "knowledge"
CONFIDENCE_INCREMENT = 0.1
MAX_CONFIDENCE = 1.0
MIN_WORD_LENGTH = 3  # query words shorter than this are ignored by recall
# The memory key that tells the record_knowledge / recall_knowledge tools which store to use (its path).
KNOWLEDGE_STORE_KEY = "knowledge.store"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class KnowledgeEntry:
    """One piece of knowledge. ``confirmed()`` is the entry one confirmation later."""

    content: str
    domain: str
    confidence: float = 0.1
    use_count: int = 0
    reasoning: str = dataclasses.field(default="", repr=False)
    category: str = dataclasses.field(default="fact", repr=False)
    created_at: str = dataclasses.field(default_factory=_now, repr=False)
    updated_at: str = dataclasses.field(default_factory=_now, repr=False)

    def confirmed(self) -> KnowledgeEntry:
        """This entry with confidence + 0.1 (at most 1.0), use count + 1 and a fresh ``updated_at``."""
        confidence = round(min(self.confidence + CONFIDENCE_INCREMENT, MAX_CONFIDENCE), 10)
        return dataclasses.replace(self, confidence=confidence, use_count=self.use_count + 1, updated_at=_now())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "entry") -> KnowledgeEntry:
        """An entry from its ``to_dict()``; ``KnowledgeError`` naming *where* for anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("content"), str) \
                or not isinstance(data.get("domain"), str):
            raise KnowledgeError(f"{where} is not a knowledge entry (a dict with string 'content' and 'domain')")
        try:
            return cls(content=data["content"], domain=data["domain"], confidence=float(data.get("confidence", 0.1)),
                       use_count=int(data.get("use_count", 0)), reasoning=str(data.get("reasoning") or ""),
                       category=str(data.get("category") or "fact"), created_at=str(data.get("created_at", "")),
                       updated_at=str(data.get("updated_at", "")))
        except (TypeError, ValueError) as exc:
            raise KnowledgeError(f"{where} has a bad confidence or use_count: {exc}") from None


def domain_file_name(domain: str) -> str:
    """The file name of *domain*: lower case, other runs as ``_`` (``"Ruby tooling"`` → ``ruby_tooling.json``)."""
    if not isinstance(domain, str):
        raise ConfigurationError(f"domain must be a string, got {domain!r}")
    safe = re.sub(r"[^a-z0-9]+", "_", domain.lower()).strip("_")
    if not safe:
        raise ConfigurationError(f"domain must contain a letter or digit (a-z, 0-9), got {domain!r}")
    return f"{safe}.json"


class KnowledgeStore:
    """Knowledge entries by domain in the directory *path* (created when missing; default ``~/.robotlab/knowledge``)."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_PATH) -> None:
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KnowledgeError(f"cannot use {str(self.path)!r} as a knowledge directory: {exc}") from None

    def __repr__(self) -> str:
        return f"KnowledgeStore({str(self.path)!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # a store travels as its path (to worker processes, too)
        return (KnowledgeStore, (str(self.path),))

    def attach(self, memory: Any) -> KnowledgeStore:
        """Point the knowledge tools of robots using *memory* (a Memory, or a robot: its memory) at this store.

        Stores the path under ``memory["knowledge.store"]``, so it reaches tools in
        worker processes (through the memory proxy) and in other processes sharing
        a Redis memory. Returns the store.
        """
        memory = getattr(memory, "memory", memory)
        memory.set(KNOWLEDGE_STORE_KEY, str(self.path))
        return self

    # -- reading -----------------------------------------------------------

    def _read(self, file: Path) -> list[KnowledgeEntry]:
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise KnowledgeError(f"cannot read knowledge file {str(file)!r}: {exc}") from None
        try:
            raw = json.loads(text) if text.strip() else []
        except ValueError as exc:
            raise KnowledgeError(f"knowledge file {str(file)!r} is not valid JSON ({exc}); repair it or move it "
                                 "aside: robotlab will not overwrite it") from None
        if not isinstance(raw, list):
            raise KnowledgeError(f"knowledge file {str(file)!r} must hold a JSON list of entries; repair it or "
                                 "move it aside: robotlab will not overwrite it")
        return [KnowledgeEntry.from_dict(item, f"entry {n} of {str(file)!r}") for n, item in enumerate(raw)]

    def entries(self, domain: str | None = None) -> list[KnowledgeEntry]:
        """Every entry of *domain*, or of all domains (in file-name order), in stored order."""
        if domain is not None:
            return self._read(self.path / domain_file_name(domain))
        return [e for file in sorted(self.path.glob("*.json")) for e in self._read(file)]

    def domains(self) -> list[str]:
        """The domains with entries, as recorded (sorted)."""
        return sorted({e.domain for e in self.entries()})

    def recall(self, query: str, *, domain: str | None = None, min_confidence: float = 0.0) -> list[KnowledgeEntry]:
        """Entries matching any keyword of *query*, at or above *min_confidence*, most confident first.

        A keyword is a whitespace-separated word of three or more characters of the
        lower-cased query; it matches when the entry's content or domain contains it.
        """
        words = [w for w in str(query).lower().split() if len(w) >= MIN_WORD_LENGTH]
        found = [e for e in self.entries(domain) if e.confidence >= min_confidence
                 and any(w in f"{e.content} {e.domain}".lower() for w in words)]
        return sorted(found, key=lambda e: -e.confidence)

    # -- writing -----------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, domain: str) -> Iterator[Path]:
        """The domain's file, with an exclusive lock on its lock file held for the block."""
        file = self.path / domain_file_name(domain)
        with open(f"{file}.lock", "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield file
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _write(self, file: Path, entries: list[KnowledgeEntry]) -> None:
        fd, temporary = tempfile.mkstemp(dir=self.path, prefix=f".{file.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump([e.to_dict() for e in entries], out, ensure_ascii=False, indent=1)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, file)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def record(self, content: str, *, domain: str, reasoning: str = "", category: str = "fact",
               confidence: float = 0.1) -> KnowledgeEntry:
        """Store *content* in *domain*, or confirm the entry that already says it; returns the stored entry."""
        if not isinstance(content, str) or not content.strip():
            raise ConfigurationError(f"knowledge content must be a non-empty string, got {content!r}")
        if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
            raise ConfigurationError(f"confidence must be a number in [0.0, 1.0], got {confidence!r}")
        with self._locked(domain) as file:
            entries = self._read(file)
            key = content.lower()
            for n, entry in enumerate(entries):
                if entry.content.lower() == key:
                    entries[n] = stored = entry.confirmed()
                    break
            else:
                stored = KnowledgeEntry(content=content, domain=domain, confidence=confidence,
                                        reasoning=str(reasoning or ""), category=str(category or "fact"))
                entries.append(stored)
            self._write(file, entries)
        return stored

    def confirm(self, entry: KnowledgeEntry) -> KnowledgeEntry:
        """Confirm the stored entry with *entry*'s content (confidence + 0.1, use count + 1); returns it."""
        with self._locked(entry.domain) as file:
            entries = self._read(file)
            key = entry.content.lower()
            for n, stored in enumerate(entries):
                if stored.content.lower() == key:
                    entries[n] = updated = stored.confirmed()
                    self._write(file, entries)
                    return updated
        raise KnowledgeError(f"Cannot confirm: entry not found in domain {entry.domain!r}")
