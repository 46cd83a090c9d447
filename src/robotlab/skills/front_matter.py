"""A small, strict parser for the YAML subset a ``SKILL.md`` front matter uses.

PyYAML is not a robotlab dependency, and a skill's front matter needs little
of YAML. Supported:

- ``key: value`` lines (keys are letters, digits, ``_``, ``-``, ``.``);
- scalars: plain text, ``"double"`` (with ``\\"  \\\\ \\n \\t \\r \\/ \\uXXXX``
  escapes) or ``'single'`` quoted strings, ``true``/``false``, ``null``/``~``,
  integers and decimal numbers;
- lists: flow (``[a, "b c"]``) or block (indented ``- item`` lines);
- nested mappings (an indented block under ``key:``), e.g. ``metadata:`` or
  ``capabilities:``;
- block strings ``|`` (literal) and ``>`` (folded), with ``-`` to strip the
  final newline;
- ``#`` comments and blank lines.

Anything else (anchors, aliases, tags, flow mappings, lists of mappings,
multi-line plain or quoted scalars) raises :class:`ConfigurationError` naming
the file and line, so a front matter never means something different here
than in a YAML tool. Like YAML, a plain value must not contain ``": "``:
quote it.

Example:
    >>> meta, body, _ = split_front_matter("---\\nname: demo\\ntags: [a, b]\\n---\\nHello\\n", "SKILL.md")
    >>> meta.data, body
    ({'name': 'demo', 'tags': ['a', 'b']}, 'Hello\\n')
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from robotlab.errors import ConfigurationError

__all__ = ["FrontMatter", "split_front_matter"]

_DELIMITER = re.compile(r"---[ \t]*")
_KEY_LINE = re.compile(r"(?P<key>[A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]+(?P<rest>.*))?")
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_BLOCK_SCALAR = re.compile(r"([|>])(-?)")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}


@dataclass(frozen=True)
class FrontMatter:
    """Parsed front matter: ``data`` (a dict) and the line of every key.

    ``lines`` maps a dotted key path (``"name"``, ``"capabilities.timeout"``)
    to its 1-based line number in the file, for error messages.
    """

    data: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    present: bool = False  # False when the file has no ``---`` block at all

    def line_of(self, key: str) -> int | None:
        return self.lines.get(key)


def split_front_matter(text: str, source: str) -> tuple[FrontMatter, str, int]:
    """Split *text* into (front matter, body, line number where the body starts).

    *source* names the file in error messages. A text that does not start with
    a ``---`` line has no front matter: ``FrontMatter(present=False)`` and the
    whole text as body.
    """
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if not _DELIMITER.fullmatch(lines[0]):
        return FrontMatter(), text, 1
    for index in range(1, len(lines)):
        if _DELIMITER.fullmatch(lines[index]):
            parser = _Parser(lines[1:index], first_line=2, source=source)
            data, key_lines = parser.parse_document()
            body = "\n".join(lines[index + 1 :])
            return FrontMatter(data, key_lines, present=True), body, index + 2
    raise ConfigurationError(
        f"{source}:1: invalid front matter: the '---' on line 1 is never closed; "
        "end the front matter with a line containing only '---'"
    )


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


class _Parser:
    """Recursive descent over indented lines. ``self.index`` is the next unread line."""

    def __init__(self, lines: list[str], *, first_line: int, source: str) -> None:
        self.lines = lines
        self.first_line = first_line
        self.source = source
        self.index = 0
        self.key_lines: dict[str, int] = {}

    # -- helpers -------------------------------------------------------------

    def lineno(self, index: int | None = None) -> int:
        return self.first_line + (self.index if index is None else index)

    def fail(self, problem: str, index: int | None = None) -> ConfigurationError:
        return ConfigurationError(f"{self.source}:{self.lineno(index)}: invalid front matter: {problem}")

    def next_significant(self) -> int | None:
        """Skip blank and comment lines; the index of the next real line, or None at the end."""
        while self.index < len(self.lines):
            line = self.lines[self.index]
            if "\t" in line[: _indent_of(line) + 1] and line.strip():
                raise self.fail("tab characters are not allowed in indentation; indent with spaces")
            if not _is_blank(line):
                return self.index
            self.index += 1
        return None

    # -- structure -----------------------------------------------------------

    def parse_document(self) -> tuple[dict[str, Any], dict[str, int]]:
        start = self.next_significant()
        if start is None:
            return {}, {}
        if _indent_of(self.lines[start]) != 0:
            raise self.fail("unexpected indentation; top-level keys start in the first column")
        if self.lines[start].lstrip().startswith("-"):
            raise self.fail("the front matter must be 'key: value' lines, not a list")
        data = self.parse_mapping(0, prefix="")
        if self.next_significant() is not None:
            raise self.fail("unexpected indentation")
        return data, self.key_lines

    def parse_mapping(self, indent: int, *, prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while (index := self.next_significant()) is not None:
            line = self.lines[index]
            current = _indent_of(line)
            if current < indent:
                break
            if current > indent:
                raise self.fail(
                    "unexpected indentation (a value cannot continue on the next line; "
                    "write 'key: >' and indent the lines below it, or quote the value on one line)"
                )
            match = _KEY_LINE.fullmatch(line.strip())
            if match is None:
                raise self.fail(f"expected 'key: value', got {line.strip()!r}")
            key = match["key"]
            path = f"{prefix}{key}"
            if key in out:
                raise self.fail(f"duplicate key {key!r} (first on line {self.key_lines[path]})")
            self.key_lines[path] = self.lineno()
            self.index += 1
            out[key] = self.parse_value(match["rest"] or "", indent, path)
        return out

    def parse_value(self, rest: str, key_indent: int, path: str) -> Any:
        rest = rest.strip()
        if rest.startswith(("|", ">")):
            block = _BLOCK_SCALAR.fullmatch(rest.split(" #", 1)[0].strip())
            if block is None:
                raise self.fail(f"unsupported block string header {rest!r}; use |, |-, > or >-", self.index - 1)
            return self.parse_block_scalar(key_indent, folded=block[1] == ">", strip=block[2] == "-")
        if rest and not rest.startswith("#"):
            return self.parse_inline(rest, self.index - 1)
        # "key:" alone: a nested block, or null when nothing is indented under it.
        index = self.next_significant()
        if index is None:
            return None
        line = self.lines[index]
        indent = _indent_of(line)
        is_item = line.strip() == "-" or line.strip().startswith("- ")
        if indent > key_indent:
            return self.parse_list(indent) if is_item else self.parse_mapping(indent, prefix=f"{path}.")
        if indent == key_indent and is_item:  # "key:\n- a\n- b" (a list need not be indented)
            return self.parse_list(indent)
        return None

    def parse_list(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while (index := self.next_significant()) is not None:
            line = self.lines[index]
            current = _indent_of(line)
            stripped = line.strip()
            if current < indent or (current == indent and not (stripped == "-" or stripped.startswith("- "))):
                break
            if current > indent:
                raise self.fail("unexpected indentation in a list")
            item = stripped[1:].strip()
            if not item or item.startswith("#"):
                raise self.fail("empty or nested list items are not supported; write '- value'")
            if _KEY_LINE.fullmatch(item) and not item.startswith(("'", '"')):
                raise self.fail("lists of mappings ('- key: value') are not supported")
            items.append(self.parse_inline(item, index))
            self.index += 1
        return items

    def parse_block_scalar(self, key_indent: int, *, folded: bool, strip: bool) -> str:
        start = self.index
        collected: list[str] = []
        block_indent: int | None = None
        while self.index < len(self.lines):
            line = self.lines[self.index]
            if line.strip():
                indent = _indent_of(line)
                if indent <= key_indent:
                    break
                if block_indent is None:
                    block_indent = indent
                elif indent < block_indent:
                    raise self.fail(f"line is less indented than the block string that starts on line "
                                    f"{self.lineno(start)}")
                collected.append(line[block_indent:])
            else:
                collected.append("")
            self.index += 1
        while collected and not collected[-1]:  # trailing blank lines are not part of the text
            collected.pop()
        if not folded:
            text = "\n".join(collected)
        else:
            # Folding: a line break between two text lines becomes a space; each blank line
            # stays a newline; lines indented deeper than the block keep their breaks.
            text = collected[0] if collected else ""
            for previous, line in itertools.pairwise(collected):
                if not line:
                    text += "\n"
                elif not previous:
                    text += line
                elif previous.startswith(" ") or line.startswith(" "):
                    text += "\n" + line
                else:
                    text += " " + line
        return text if strip or not text else text + "\n"

    # -- scalars -------------------------------------------------------------

    def parse_inline(self, text: str, index: int) -> Any:
        """A scalar or a flow list on one line (comments already possible at the end)."""
        if text.startswith("["):
            items, rest = self.parse_flow_list(text, index)
            self.expect_end(rest, index)
            return items
        if text.startswith("{"):
            raise self.fail("flow mappings ({...}) are not supported; use an indented block", index)
        value, rest = self.parse_scalar(text, index, terminators="")
        self.expect_end(rest, index)
        return value

    def expect_end(self, rest: str, index: int) -> None:
        rest = rest.strip()
        if rest and not rest.startswith("#"):
            raise self.fail(f"unexpected text after the value: {rest!r}", index)

    def parse_flow_list(self, text: str, index: int) -> tuple[list[Any], str]:
        items: list[Any] = []
        rest = text[1:].lstrip()
        while True:
            if rest.startswith("]"):  # also accepts a trailing comma, as YAML does
                return items, rest[1:]
            if not rest or rest[0] == "#":
                raise self.fail("a '[' list must be closed with ']' on the same line", index)
            if rest[0] in "[{":
                raise self.fail("nested lists or mappings inside [...] are not supported", index)
            if rest[0] == ",":
                raise self.fail("empty item in a [...] list", index)
            value, rest = self.parse_scalar(rest, index, terminators=",]")
            items.append(value)
            rest = rest.lstrip()
            if rest.startswith(","):
                rest = rest[1:].lstrip()
            elif not rest.startswith("]"):
                raise self.fail("items of a [...] list must be separated by ',' and the list closed with ']'",
                                index)

    def parse_scalar(self, text: str, index: int, *, terminators: str) -> tuple[Any, str]:
        """Parse one scalar at the start of *text*; return it and the unparsed remainder."""
        first = text[:1]
        if first == '"':
            return self.parse_double_quoted(text, index)
        if first == "'":
            return self.parse_single_quoted(text, index)
        if first in ("&", "*", "!"):
            raise self.fail("anchors (&), aliases (*) and tags (!) are not supported", index)
        if first in ("%", "@", "`", "|", ">") or text.startswith("- ") or text == "-":
            raise self.fail(f"a plain value cannot start with {first!r}; put the value in quotes", index)
        end = len(text)
        for i, char in enumerate(text):
            if char in terminators or (char == "#" and i > 0 and text[i - 1] in " \t"):
                end = i
                break
        raw = text[:end].strip()
        if ": " in raw or raw.endswith(":"):
            raise self.fail(f"the value {raw!r} contains ': '; put it in quotes", index)
        return _plain_value(raw), text[end:]

    def parse_double_quoted(self, text: str, index: int) -> tuple[str, str]:
        out: list[str] = []
        i = 1
        while i < len(text):
            char = text[i]
            if char == '"':
                return "".join(out), text[i + 1 :]
            if char == "\\":
                code = text[i + 1 : i + 2]
                if code == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", text[i + 2 : i + 6]):
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                if code not in _ESCAPES:
                    raise self.fail(f"unknown escape '\\{code}' in a double-quoted string", index)
                out.append(_ESCAPES[code])
                i += 2
                continue
            out.append(char)
            i += 1
        raise self.fail('a "double-quoted" string must end on the same line', index)

    def parse_single_quoted(self, text: str, index: int) -> tuple[str, str]:
        out: list[str] = []
        i = 1
        while i < len(text):
            if text[i] == "'":
                if text[i + 1 : i + 2] == "'":  # '' is an escaped quote
                    out.append("'")
                    i += 2
                    continue
                return "".join(out), text[i + 1 :]
            out.append(text[i])
            i += 1
        raise self.fail("a 'single-quoted' string must end on the same line", index)


def _plain_value(raw: str) -> Any:
    if raw in ("", "~", "null", "Null", "NULL"):
        return None
    if raw in ("true", "True", "TRUE"):
        return True
    if raw in ("false", "False", "FALSE"):
        return False
    if _INT.fullmatch(raw):
        return int(raw)
    if _FLOAT.fullmatch(raw):
        return float(raw)
    return raw
