"""JSON as the RFC defines it, and as the rest of the service can store and send back.

Python's ``json`` also accepts ``NaN``, ``Infinity`` and numbers such as ``1e309`` that overflow to
``inf``, none of which can be written back as JSON (an upstream or a client would receive ``Infinity``).
It also decodes a lone surrogate escape (``"\\ud800"``) into a string that UTF-8 cannot encode, so the
first write to SQLite, the first JSON answer or the first upstream request carrying it raises; and
it recurses once per nesting level, so a document nested a few thousand deep raises ``RecursionError``
(and one a few hundred deep does so later, in ``json.dumps`` or ``copy.deepcopy``). Every request body
is read through :func:`loads`, which refuses all of these with a ``ValueError`` naming where.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NoReturn

#: The deepest nesting of arrays and objects accepted. Chat requests (content parts, tool schemas) and
#: memory metadata stay far below it; every later recursive step (``json.dumps``, ``copy.deepcopy``,
#: error flattening) stays far from Python's recursion limit.
MAX_DEPTH = 100

# A surrogate escape in the raw text: only then can a decoded string hold a lone surrogate (raw UTF-8
# cannot encode one). A valid pair, as ``json.dumps`` writes emoji by default, decodes to one character.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# What :func:`_deeper_than_limit` keeps of a document's text: quotes and brackets.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_QUOTED = re.compile(rb'"[^"]*"')
# One scan: a pair that removing an inner one forms is left for the next pass (one level a pass).
_INNERMOST = re.compile(rb"\[\]|\{\}")
_FIELD_NAME_CHARS = 100


class NumberOutOfRange(ValueError):
    """A number beyond a double; ``field`` is the key it was given under, when it was an object's."""

    def __init__(self, text: str, field: str | None = None) -> None:
        self.text = text[:40]
        self.field = field
        where = f"'{field}': " if field else ""
        super().__init__(f"{where}the number {self.text} is out of range")


class LoneSurrogate(ValueError):
    """A string (a value or a key) holding half of a UTF-16 surrogate pair, which no UTF-8 text can.

    ``field`` is its path in the document (``memories[2].content``, ``metadata.note``; ``""`` for the
    document itself), with any surrogate in a key written as its ``\\uXXXX`` escape so that the path
    itself can be sent back; ``reason`` says what is wrong without the path."""

    reason = "Holds a lone UTF-16 surrogate (half of a pair, such as \\ud800), which is not valid Unicode."

    def __init__(self, field: str) -> None:
        self.field = field
        super().__init__(f"'{field}': {self.reason}" if field else self.reason)


class NestingTooDeep(ValueError):
    """Arrays and objects nested deeper than :data:`MAX_DEPTH`; ``field`` is where the limit was
    crossed (``""`` when the parser itself ran out of stack, before any path was known)."""

    reason = f"Arrays and objects are nested deeper than {MAX_DEPTH} levels."

    def __init__(self, field: str = "") -> None:
        self.field = field
        super().__init__(f"'{field}': {self.reason}" if field else self.reason)


class _Overflow(float):
    text = ""


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def printable_name(name: str) -> str:
    """``name`` as it can be shown in an error: surrogates escaped, at most 100 characters."""
    shown = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", name[:_FIELD_NAME_CHARS])
    return shown + ("…" if len(name) > _FIELD_NAME_CHARS else "")


# Where a node sits: ``(parent trail, key)`` links, joined into a path only when an error names it.
_Trail = tuple[Any, str | int] | None


def _path(trail: _Trail) -> str:
    keys: list[str | int] = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    path = ""
    for key in reversed(keys):
        if isinstance(key, int):
            path += f"[{key}]"
        else:
            path += f".{printable_name(key)}" if path else printable_name(key)
        if len(path) > _FIELD_NAME_CHARS:
            return path[:_FIELD_NAME_CHARS] + "…"
    return path


def _check(value: Any, *, surrogates: bool) -> None:
    """Raise for the first container nested beyond :data:`MAX_DEPTH`, and (when ``surrogates``) for
    the first string holding a lone surrogate, naming its path. Iterative: the document may be as deep
    as the parser allowed. The slow path: :func:`loads` calls it once it knows there is something to
    find."""
    if surrogates and isinstance(value, str) and _SURROGATE.search(value):
        raise LoneSurrogate("")
    stack: list[tuple[Any, int, _Trail]] = [(value, 1, None)]
    containers = (dict, list)
    while stack:
        node, depth, trail = stack.pop()
        if type(node) not in containers:
            continue
        if depth > MAX_DEPTH:
            raise NestingTooDeep(_path(trail))
        items = node.items() if type(node) is dict else enumerate(node)
        if surrogates:
            for key, child in items:
                if (type(key) is str and _SURROGATE.search(key)) or (
                    type(child) is str and _SURROGATE.search(child)
                ):
                    raise LoneSurrogate(_path((trail, key)))
        items = node.items() if type(node) is dict else enumerate(node)
        stack.extend(
            (child, depth + 1, (trail, key))
            for key, child in reversed(list(items))
            if type(child) in containers
        )


def loads(raw: str | bytes) -> Any:
    """``json.loads`` that raises ``ValueError`` for NaN and ±Infinity, :class:`NumberOutOfRange`
    (naming the key when it can) for numbers beyond a double, :class:`LoneSurrogate` for text that is
    not valid Unicode and :class:`NestingTooDeep` beyond :data:`MAX_DEPTH` levels."""
    overflows: list[str] = []

    def parse_float(text: str) -> float:
        value = float(text)
        if math.isfinite(value):
            return value
        overflows.append(text)
        marker = _Overflow(value)
        marker.text = text
        return marker

    def object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        for key, value in pairs:
            if isinstance(value, _Overflow):
                raise NumberOutOfRange(value.text, field=key)
        return dict(pairs)

    try:
        value = json.loads(
            raw, parse_constant=_reject_constant, parse_float=parse_float, object_pairs_hook=object_pairs
        )
    except RecursionError:
        raise NestingTooDeep() from None
    if overflows:  # inside an array, or the whole document
        raise NumberOutOfRange(overflows[0])
    if isinstance(raw, bytes):
        escaped = _SURROGATE_ESCAPE_BYTES.search(raw) is not None
    else:
        escaped = bool(_SURROGATE_ESCAPE.search(raw) or _SURROGATE.search(raw))
    if _deeper_than_limit(raw):
        _check(value, surrogates=escaped)
    # A surrogate escape may be half of a valid pair (json.dumps escapes emoji so by default): look for
    # a lone one in the decoded text first, in C, and walk the document only when there is one.
    elif escaped and _SURROGATE.search(json.dumps(value, ensure_ascii=False)):
        _check(value, surrogates=True)
    return value


def _deeper_than_limit(raw: str | bytes) -> bool:
    """Whether the (parsed, so well-formed) document nests beyond :data:`MAX_DEPTH`, read from its
    text in C-speed passes (a 32 MB bulk body takes tens of milliseconds; walking it, hundreds).

    Escaped backslashes, then escaped quotes, go first, so that every quote left opens or closes a
    string; then everything but quotes and brackets; then the strings (which leaves brackets only).
    Each pass of removing the innermost ``[]`` and ``{}`` pairs then takes one level off the deepest
    branch. A document with fewer brackets than the limit skips all of it."""
    text = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    if text.count(b"[") + text.count(b"{") <= MAX_DEPTH:
        return False
    structure = text.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    # Two adjacent quotes are an empty string or one string's end and the next one's start: either way
    # dropping them leaves every other string's quotes paired.
    brackets = _QUOTED.sub(b"", structure.replace(b'""', b""))
    for _ in range(MAX_DEPTH):
        if not brackets:
            return False
        brackets = _INNERMOST.sub(b"", brackets)
    return bool(brackets)
