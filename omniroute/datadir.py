"""The data directory is private to the user who runs the service: the directory 0700, its files 0600.

It holds the database (provider keys, every memory), the task queue, the Django and encryption keys
and the models. :func:`make_private` runs when the settings load, before anything opens a file: it
sets the process umask to 0077, so every file the process creates is its user's alone. That includes
SQLite's ``-wal`` and ``-shm`` files, which SQLite creates with the mode of their database file.
:func:`tighten` fixes an install made before this (files 0644); ``serve`` and ``bootstrap`` run it at
start and log what they changed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings

PRIVATE_UMASK = 0o077
# Besides the database file: what SQLite creates next to it.
SQLITE_SIBLINGS = ("-wal", "-shm", "-journal")


def make_private(data_dir: Path) -> None:
    """Set the umask to 0077 and create ``data_dir`` (0700) if it is missing."""
    os.umask(PRIVATE_UMASK)
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)


def sqlite_files(path: str | Path) -> list[Path]:
    """A SQLite database file and the files SQLite keeps beside it."""
    base = Path(path)
    return [base, *(base.with_name(base.name + suffix) for suffix in SQLITE_SIBLINGS)]


def tighten(data_dir: Path, extra: Iterable[Path] = ()) -> list[tuple[Path, int, int]]:
    """Remove group and other permissions from ``data_dir``, everything under it and ``extra`` (files
    kept elsewhere, such as a database at ``OMNIROUTE_DB_PATH``); return ``(path, old mode, new mode)``
    for each one changed. Symbolic links are not followed."""
    changed: list[tuple[Path, int, int]] = []

    def fix(path: Path) -> None:
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
        except FileNotFoundError:
            return
        if path.is_symlink() or not mode & 0o077:
            return
        new = mode & 0o700 | (0o700 if path.is_dir() else 0o600)
        path.chmod(new)
        changed.append((path, mode, new))

    fix(data_dir)
    for root, dirs, files in os.walk(data_dir):
        for name in [*dirs, *files]:
            fix(Path(root) / name)
    for path in extra:
        fix(path)
    return changed


def describe(changed: list[tuple[Path, int, int]]) -> str:
    """One line for the log: how many paths were tightened, and the first few."""
    shown = ", ".join(f"{path} {old:04o}→{new:04o}" for path, old, new in changed[:5])
    more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
    return f"Data directory permissions tightened on {len(changed)} path(s): {shown}{more}"


def tighten_install() -> str | None:
    """:func:`tighten` the configured data directory, database and queue files; the log line to write,
    or ``None`` when nothing had to change."""
    extra = sqlite_files(str(settings.DATABASES["default"]["NAME"]))
    queue = settings.HUEY.get("filename")
    if queue:
        extra += sqlite_files(str(queue))
    changed = tighten(Path(settings.DATA_DIR), extra)
    return describe(changed) if changed else None
