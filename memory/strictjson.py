"""JSON as the RFC defines it: Python's ``json`` also accepts ``NaN``, ``Infinity`` and numbers such as
``1e309`` that overflow to ``inf``, none of which can be written back as JSON (an upstream or a
client would receive ``Infinity``). Every request body is read through :func:`loads`."""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn


class NumberOutOfRange(ValueError):
    """A number beyond a double; ``field`` is the key it was given under, when it was an object's."""

    def __init__(self, text: str, field: str | None = None) -> None:
        self.text = text[:40]
        self.field = field
        where = f"'{field}': " if field else ""
        super().__init__(f"{where}the number {self.text} is out of range")


class _Overflow(float):
    text = ""


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def loads(raw: str | bytes) -> Any:
    """``json.loads`` that raises ``ValueError`` for NaN and ±Infinity, and :class:`NumberOutOfRange`
    (naming the key when it can) for numbers beyond a double."""
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

    value = json.loads(
        raw, parse_constant=_reject_constant, parse_float=parse_float, object_pairs_hook=object_pairs
    )
    if overflows:  # inside an array, or the whole document
        raise NumberOutOfRange(overflows[0])
    return value
