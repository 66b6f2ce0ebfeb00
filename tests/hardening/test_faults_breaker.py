"""The circuit breaker on its own: when it opens, refuses, tries again and closes."""

from __future__ import annotations

import threading
import time

from memory.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker


def test_it_opens_after_the_threshold_of_failures_in_a_row_and_refuses_until_the_cool_down():
    breaker = CircuitBreaker("dep", threshold=3, cooldown=60)
    for _ in range(2):
        assert breaker.allow()
        breaker.record_failure("timed out")
    assert breaker.state == CLOSED and breaker.failing
    breaker.record_failure("timed out")
    assert breaker.state == OPEN and not breaker.allow()
    snap = breaker.snapshot()
    assert (snap["failures"], snap["threshold"], snap["lastFailure"]) == (3, 3, "timed out")
    assert snap["openedAt"] and snap["retryAt"] > snap["openedAt"]
    assert breaker.refusal().startswith("dep: circuit open after 3 failures in a row (last: timed out)")


def test_a_success_starts_the_count_again():
    breaker = CircuitBreaker("dep", threshold=2, cooldown=60)
    breaker.record_failure("HTTP 500")
    breaker.record_success()
    breaker.record_failure("HTTP 500")
    assert breaker.state == CLOSED and breaker.snapshot()["failures"] == 1


def test_without_a_probe_the_next_call_after_the_cool_down_is_the_one_trial():
    breaker = CircuitBreaker("dep", threshold=1, cooldown=0.05)
    breaker.record_failure("refused")
    assert not breaker.allow()
    time.sleep(0.06)
    assert breaker.allow() and breaker.state == HALF_OPEN
    assert not breaker.allow()  # one trial at a time
    breaker.record_failure("refused again")
    assert breaker.state == OPEN and not breaker.allow()  # a failed trial: another cool-down
    time.sleep(0.06)
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == CLOSED and breaker.allow() and breaker.snapshot()["retryAt"] is None


def test_a_probe_runs_the_trial_on_its_own_thread_and_no_caller_waits_for_it():
    answering = threading.Event()
    threads: list[str] = []

    def probe() -> None:
        threads.append(threading.current_thread().name)
        if not answering.is_set():
            raise TimeoutError("still hung")

    breaker = CircuitBreaker("dep", threshold=1, cooldown=0.05, probe=probe, describe=lambda e: str(e))
    breaker.record_failure("hung")
    time.sleep(0.06)
    assert not breaker.allow()  # the probe is the trial: the caller falls back at once
    deadline = time.monotonic() + 2
    while breaker.state != OPEN and time.monotonic() < deadline:
        time.sleep(0.01)
    assert breaker.state == OPEN and breaker.snapshot()["lastFailure"] == "still hung"
    answering.set()
    time.sleep(0.06)
    assert not breaker.allow()
    while breaker.state != CLOSED and time.monotonic() < deadline:
        time.sleep(0.01)
    assert breaker.state == CLOSED and breaker.allow()
    assert threads and all(name.startswith("breaker-probe dep") for name in threads)
