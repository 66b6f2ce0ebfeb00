"""A circuit breaker for each remote dependency (a remote embedding endpoint, a Qdrant server).

Without one, a dependency that hangs costs every request its timeout. With one:

- **closed**: calls go through. ``threshold`` failures in a row open it (a success in between starts
  the count again);
- **open**: calls are refused at once, so the caller takes its fallback (keyword search for a failed
  embedding, the database's vector store for Qdrant) without waiting. After ``cooldown`` seconds it
  goes
- **half-open**: one trial is let through. A breaker made with a ``probe`` runs the trial on a
  background thread, so no request waits on a dependency that may still hang; without one, the next
  call is the trial. A success closes the breaker, a failure opens it for another cool-down.

The state is per process (each worker learns on its own) and in memory: a restart starts closed. The
owners build their breakers from ``MEMORY_BREAKER_FAILURES`` and ``MEMORY_BREAKER_COOLDOWN_SECONDS``;
this module reads no settings, so the embedding sources that use it stay free of Django.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

logger = logging.getLogger("memory.breaker")

CLOSED = "closed"
OPEN = "open"
HALF_OPEN = "half_open"


class CircuitOpen(Exception):
    """A call was refused because the breaker is open; the message says why and until when."""


def _iso(at: datetime | None) -> str | None:
    return at.isoformat().replace("+00:00", "Z") if at is not None else None


def _type_name(exc: BaseException) -> str:
    return type(exc).__name__


class CircuitBreaker:
    """The breaker of one dependency, ``name`` (a phrase for people: "remote embeddings at host"):
    open after ``threshold`` failures in a row, for ``cooldown`` seconds.

    ``probe``: a call that raises when the dependency is still down (the half-open trial, run on a
    background thread); ``describe`` turns its exception into the text kept as the last failure,
    which must never carry a secret or a remote body. Thread-safe.
    """

    def __init__(
        self,
        name: str,
        *,
        threshold: int = 3,
        cooldown: float = 30.0,
        probe: Callable[[], Any] | None = None,
        describe: Callable[[BaseException], str] = _type_name,
    ) -> None:
        self.name = name
        self.threshold = max(1, int(threshold))
        self.cooldown = max(0.0, float(cooldown))
        self._probe = probe
        self._describe = describe
        self._lock = threading.Lock()
        self._state = CLOSED
        self._failures = 0
        self._opened_at = 0.0  # monotonic
        self._trial_at = 0.0  # monotonic, when the half-open trial started
        self._last_error: str | None = None
        self._last_failure_at: datetime | None = None
        self._last_success_at: datetime | None = None
        self._opened_wall: datetime | None = None

    # -- the call path

    @property
    def state(self) -> str:
        with self._lock:
            return self._state

    def allow(self) -> bool:
        """Whether a call may go to the dependency now. When the cool-down is over this starts the
        half-open trial: the probe (and answers False) or this call (and answers True)."""
        now = time.monotonic()
        start_probe = False
        with self._lock:
            if self._state == CLOSED:
                return True
            cooled = now - (self._opened_at if self._state == OPEN else self._trial_at) >= self.cooldown
            if not cooled:
                # Open within its cool-down, or half-open with the trial still running (a trial that
                # never reported back is given up after one more cool-down).
                return False
            self._state = HALF_OPEN
            self._trial_at = now
            if self._probe is None:
                return True
            start_probe = True
        if start_probe:
            threading.Thread(target=self._run_probe, name=f"breaker-probe {self.name}", daemon=True).start()
        return False

    def check(self) -> None:
        """Raise :class:`CircuitOpen` unless :meth:`allow`."""
        if not self.allow():
            raise CircuitOpen(self.refusal())

    def record_success(self) -> None:
        with self._lock:
            if self._state != CLOSED:
                logger.info("%s answered again: circuit closed", self.name)
            self._state = CLOSED
            self._failures = 0
            self._last_success_at = datetime.now(UTC)

    def record_failure(self, error: str) -> None:
        """Count a failed call; ``error`` (sanitised by the caller) is kept as the last failure."""
        with self._lock:
            self._failures += 1
            self._last_error = error
            self._last_failure_at = datetime.now(UTC)
            if self._state == HALF_OPEN or (self._state == CLOSED and self._failures >= self.threshold):
                if self._state == CLOSED:
                    logger.warning(
                        "%s failed %s times in a row (%s): circuit open for %.0f s",
                        self.name,
                        self._failures,
                        error,
                        self.cooldown,
                    )
                self._state = OPEN
                self._opened_at = time.monotonic()
                self._opened_wall = self._last_failure_at

    def _run_probe(self) -> None:
        assert self._probe is not None
        try:
            self._probe()
        except Exception as exc:
            self.record_failure(self._describe(exc))
            logger.info("%s still failing (%s): circuit stays open", self.name, self._last_error)
        else:
            self.record_success()

    # -- what people see

    def refusal(self) -> str:
        """Why calls are refused now, as a sentence ("... circuit open after 3 failures in a row ...")."""
        snap = self.snapshot()
        text = f"{self.name}: circuit {snap['state'].replace('_', '-')} after {snap['failures']} failures in a row"
        if snap["lastFailure"]:
            text += f" (last: {snap['lastFailure']})"
        if snap["retryAt"]:
            text += f"; next try at {snap['retryAt']}"
        return text

    def snapshot(self) -> dict[str, Any]:
        """``{state, failures, threshold, cooldownSeconds, lastFailure, lastFailureAt, lastSuccessAt,
        openedAt, retryAt}`` (times ISO 8601, UTC; ``retryAt`` only while open)."""
        with self._lock:
            retry = None
            if self._state == OPEN and self._opened_wall is not None:
                left = max(0.0, self.cooldown - (time.monotonic() - self._opened_at))
                retry = datetime.now(UTC) + timedelta(seconds=left)
            return {
                "state": self._state,
                "failures": self._failures,
                "threshold": self.threshold,
                "cooldownSeconds": self.cooldown,
                "lastFailure": self._last_error,
                "lastFailureAt": _iso(self._last_failure_at),
                "lastSuccessAt": _iso(self._last_success_at),
                "openedAt": _iso(self._opened_wall) if self._state != CLOSED else None,
                "retryAt": _iso(retry),
            }

    @property
    def failing(self) -> bool:
        """Whether the last call failed (the breaker may still be closed): its caller fell back."""
        with self._lock:
            return self._failures > 0
