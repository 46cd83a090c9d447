"""Document storage of a memory: delegation to the optional ``document_store`` extension.

``store_document``, ``search_documents``, ``document_keys`` and
``delete_document`` (a mixin of :class:`~robotlab.memory.Memory`) call the
extension registered as ``"document_store"`` with the memory as first
argument; without one they raise ``DependencyError`` naming the extra.

Example:
    >>> from robotlab.memory import Memory
    >>> Memory().document_keys()
    Traceback (most recent call last):
    ...
    robotlab.errors.DependencyError: document storage requires the robotlab[documents] extra. ...

Standard library only.
"""

from __future__ import annotations

from typing import Any

from robotlab.errors import DependencyError
from robotlab.extensions import extension, extension_loaded

__all__ = ["DocumentStorage"]

# robot_lab's message with the gem and Gemfile line replaced by the extra and its pip command.
_DOCUMENTS_MESSAGE = (
    "document storage requires the robotlab[documents] extra. Install it with `pip install 'robotlab[documents]'`."
)


class DocumentStorage:
    """The document methods of a memory, each delegating to ``extension("document_store")``."""

    def _document_store(self) -> Any:
        if not extension_loaded("document_store"):
            raise DependencyError(_DOCUMENTS_MESSAGE)
        return extension("document_store")

    def store_document(self, key: str, text: str, **metadata: Any) -> Any:
        """Delegates to ``extension("document_store").store_document(memory, key, text, **metadata)``."""
        return self._document_store().store_document(self, key, text, **metadata)

    def search_documents(self, query: str, limit: int = 5) -> Any:
        """Delegates to ``extension("document_store").search_documents(memory, query, limit)``."""
        return self._document_store().search_documents(self, query, limit)

    def document_keys(self) -> Any:
        """Delegates to ``extension("document_store").document_keys(memory)``."""
        return self._document_store().document_keys(self)

    def delete_document(self, key: str) -> Any:
        """Delegates to ``extension("document_store").delete_document(memory, key)``."""
        return self._document_store().delete_document(self, key)
