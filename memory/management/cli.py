"""What the management commands share: the ``--owner`` option's parser, a text progress bar, and the
per-key loop of the commands that cron runs for every API key."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from django.core.management.base import BaseCommand, CommandError, OutputWrapper

from memory.dialect import error_message
from memory.models import ApiKey
from memory.services.summarization import summarizable_owners


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


def selected_owners(raw: str | None, option: str) -> list[ApiKey]:
    """The API keys a per-key command runs for: the one ``raw`` names (the value of ``option``, an id),
    else every key that has memories."""
    if raw is None:
        return list(summarizable_owners())
    try:
        owner_id = uuid.UUID(raw)
    except ValueError:
        raise CommandError(f"{option} {raw!r} is not an API key id (a UUID)") from None
    found = ApiKey.objects.filter(pk=owner_id).first()
    if found is None:
        raise CommandError(f"{option} {raw}: no such API key")
    return [found]


def for_each_owner(
    command: BaseCommand,
    owners: list[ApiKey],
    step: Callable[[ApiKey], Iterable[str]],
    *,
    verb: str,
    noun: str,
) -> None:
    """Run ``step`` for each key, printing the lines it yields: after ``"<id> (<name>): "``, except the
    indented ones (details under the line before). A key that fails is reported on stderr and the
    others still run; then the command fails, naming them. ``verb`` and ``noun`` name the work ("nothing
    to <verb>", "<noun> failed for …")."""
    failures: list[str] = []
    for owner in owners:
        label = f"{owner.pk} ({owner.name})"
        try:
            for line in step(owner):
                command.stdout.write(line if line.startswith(" ") else f"{label}: {line}")
        except Exception as exc:
            failures.append(str(owner.pk))
            command.stderr.write(f"{label}: FAILED: {type(exc).__name__}: {error_message(exc)}")
    if not owners:
        command.stdout.write(f"No API keys: nothing to {verb}.")
    if failures:
        raise CommandError(f"{noun} failed for {len(failures)} API key(s): {', '.join(failures)}")
