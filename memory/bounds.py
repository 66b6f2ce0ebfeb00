"""The upper bounds of the integers that callers send, on every interface.

SQLite integers are 64-bit: a larger value that reaches a query (an ``OFFSET``,
a ``LIMIT``) fails in the driver (``OverflowError``, "datatype mismatch"), and
one that does not still asks for absurd work. So every integer read from a
request, a tool call or a command line is checked against a range before use.
Fields with a bound of their own keep it (``limit`` ≤ 200, ``maxTokens`` ≤ 16000,
``port`` ≤ 65535, …); what would otherwise be open-ended is bounded here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

# A page number, a row offset, a batch size or a token budget: far beyond any real store, far below 2**63.
MAX_POSITION = 1_000_000_000
# Threads a command may start (embedding distillation, background-task workers).
MAX_THREADS = 256


def int_option(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number in ``lo..hi``; anything else names the option and the range."""

    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be between {lo} and {hi} (a whole number), got {raw!r}")
        return value

    return parse
