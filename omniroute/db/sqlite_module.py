"""Choose a ``sqlite3`` module that can load extensions and has FTS5.

The stock ``sqlite3`` of pyenv-built CPythons (the default here) is compiled
without ``enable_load_extension``. ``pysqlite3-binary`` ships a recent SQLite
(3.51) with FTS5 and extension loading in a manylinux wheel; we prefer it over
``sqlean-py`` because its module is a drop-in copy of the stdlib module (same
``dbapi2`` layout and exception classes) and it does not bundle extra
extensions we would then have to reason about.

Django's sqlite3 backend does ``from sqlite3 import dbapi2 as Database`` and
binds its cursor class to that module, so swapping only the ``connect`` call
fails (``Cursor() argument 1 must be sqlite3.Connection``). The replacement
must therefore be installed as ``sqlite3`` in ``sys.modules`` *before*
``django.db.backends.sqlite3.base`` is imported; ``select_sqlite_module()`` is
called at the top of ``omniroute/db/base.py`` for that reason.
"""

from __future__ import annotations

import importlib
import sqlite3  # the stdlib module, whatever sys.modules["sqlite3"] becomes below
import sys
from types import ModuleType

from django.core.exceptions import ImproperlyConfigured

_selected: ModuleType | None = None


def stdlib_can_load_extensions() -> bool:
    conn = sqlite3.connect(":memory:")
    try:
        return hasattr(conn, "enable_load_extension")
    finally:
        conn.close()


def select_sqlite_module() -> ModuleType:
    """Return the sqlite3 module to use, installing pysqlite3 as ``sqlite3`` if needed."""
    global _selected
    if _selected is not None:
        return _selected
    if stdlib_can_load_extensions():
        _selected = sqlite3
        return _selected
    try:
        pysqlite3 = importlib.import_module("pysqlite3")
        dbapi2 = importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        # The system check memory.E001 reports this loudly.
        _selected = sqlite3
        return _selected
    django_backend = sys.modules.get("django.db.backends.sqlite3.base")
    if django_backend is not None and django_backend.Database is not dbapi2:
        raise ImproperlyConfigured(
            "django.db.backends.sqlite3 was imported before omniroute.db could install "
            "pysqlite3 as 'sqlite3'; import omniroute.db.base first."
        )
    sys.modules["sqlite3"] = pysqlite3
    sys.modules["sqlite3.dbapi2"] = dbapi2
    _selected = pysqlite3
    return _selected
