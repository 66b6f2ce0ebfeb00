"""What the management commands share: the ``--owner`` option's parser and a text progress bar."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.core.management.base import CommandError, OutputWrapper


def owner_option(raw: str) -> uuid.UUID:
    """``--owner``: an API key id (a UUID)."""
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise CommandError(f"--owner must be an API key id (a UUID), got {raw!r}") from None


def progress_bar(stream: OutputWrapper, label: str) -> Callable[[int, int], None]:
    """A text progress bar on ``stream``: redrawn in place on a terminal, one line per step elsewhere."""
    tty = stream.isatty()

    def draw(done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        line = f"{label} [{'#' * filled}{'-' * (width - filled)}] {done}/{total}"
        if tty:
            stream.write("\r" + line, ending="\n" if done >= total else "")
        else:
            stream.write(line)
        stream.flush()

    return draw
