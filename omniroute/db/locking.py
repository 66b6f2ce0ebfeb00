"""SQLite's one write lock: a fair queue for it in this process, a deadline, and one error when it passes.

SQLite lets one connection write at a time. A connection that finds the lock taken sleeps in SQLite's
busy handler and polls, which is not a queue: a writer that commits and begins again at once (a bulk
import's next chunk) usually wins over writers that have been polling for seconds. In this process
every write transaction (``BEGIN IMMEDIATE``, Django's ``atomic``) therefore first takes its turn at a
:class:`WriteGate`, first come, first served, and holds it until its commit or rollback; SQLite's busy
timeout still arbitrates between processes (a management command beside the server).

A transaction that cannot start within its deadline (the busy timeout, ``OMNIROUTE_DB_BUSY_TIMEOUT_MS``,
or a shorter one set with :func:`write_deadline`) raises :class:`DatabaseBusy`, and so does any SQLite
"database is locked" error: the interfaces answer it with 503 and ``Retry-After``, never 500.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.utils import OperationalError

from omniroute.db.sqlite_module import select_sqlite_module

# What a client is told to wait before retrying a write refused by a busy database (seconds).
RETRY_AFTER_SECONDS = 2
# What every interface tells the client then (with ``Retry-After``).
BUSY_MESSAGE = f"The database is busy with other writes; retry in {RETRY_AFTER_SECONDS} s"
# SQLite's messages for SQLITE_BUSY and SQLITE_LOCKED ("database is locked", "database table is locked",
# "database schema is locked").
_LOCK_MESSAGES = ("is locked", "database is busy")


class DatabaseBusy(OperationalError):
    """The write lock was not free within the deadline. A subclass of Django's ``OperationalError``
    (code that retries locked databases keeps working); its message keeps SQLite's "database is locked"."""

    retry_after = RETRY_AFTER_SECONDS

    def __init__(self, detail: str = "database is locked") -> None:
        super().__init__(f"{detail}: another write holds the database; retry in {self.retry_after} s")


def is_lock_error(exc: BaseException) -> bool:
    """Whether ``exc`` says that another connection holds SQLite's lock (busy or locked)."""
    if isinstance(exc, DatabaseBusy):
        return True
    if not isinstance(exc, _operational_errors()):
        return False
    text = str(exc).lower()
    return any(message in text for message in _LOCK_MESSAGES)


def _operational_errors() -> tuple[type[BaseException], ...]:
    # Django's wrapper and the DB-API module's own class (pysqlite3 or the stdlib's sqlite3).
    return (OperationalError, select_sqlite_module().OperationalError)


class WriteGate:
    """A first-come, first-served lock with a timeout, handed from one holder to the next waiter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = False
        self._waiting: deque[threading.Event] = deque()

    def acquire(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the turn; returns whether it was had."""
        with self._lock:
            if not self._held and not self._waiting:
                self._held = True
                return True
            turn = threading.Event()
            self._waiting.append(turn)
        if turn.wait(max(timeout, 0.0)):
            return True
        with self._lock:
            if turn.is_set():  # handed over while the wait was timing out
                return True
            self._waiting.remove(turn)
            return False

    def release(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()  # stays held: the next waiter owns it now
            else:
                self._held = False

    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)


_gates: dict[str, WriteGate] = {}
_gates_lock = threading.Lock()


def gate_for(name: str) -> WriteGate:
    """The gate of the database file ``name`` (one per file, shared by this process's connections)."""
    with _gates_lock:
        gate = _gates.get(name)
        if gate is None:
            gate = _gates[name] = WriteGate()
        return gate


def writers_waiting(using: str = DEFAULT_DB_ALIAS) -> int:
    """How many write transactions of this process wait for their turn at ``using``'s lock (0 on an
    engine without one, such as PostgreSQL, whose writers do not wait for each other's whole transaction)."""
    wrapper: Any = connections[using]
    if wrapper.vendor != "sqlite":
        return 0
    with _gates_lock:
        gate = _gates.get(str(wrapper.settings_dict["NAME"]))
    return gate.waiting() if gate is not None else 0


@contextmanager
def write_deadline(seconds: float, using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Write transactions begun in this block on this thread's connection wait at most ``seconds`` for
    the lock (then :class:`DatabaseBusy`): for writes that are worth doing only when the lock is free,
    such as embedding on a read."""
    wrapper: Any = connections[using]
    previous = getattr(wrapper, "write_deadline", None)
    wrapper.write_deadline = seconds
    try:
        yield
    finally:
        wrapper.write_deadline = previous
