"""``serve``'s task threads run at a lower CPU priority than its request threads (Linux), so indexing and
extraction yield the CPU to requests when both want it (``OMNIROUTE_TASK_NICE``)."""

from __future__ import annotations

import os
import sys
import threading

import pytest
from django.test import override_settings

from memory.management.commands.serve import lower_task_priority

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own priority: Linux")


def _niceness_in_a_thread() -> int:
    """Call the startup hook in a new thread, as Huey's worker does, and read that thread's niceness."""
    seen: list[int] = []

    def work() -> None:
        lower_task_priority()
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(10)
    return seen[0]


def test_a_task_thread_gets_the_configured_niceness_and_the_requests_keep_theirs():
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with override_settings(OMNIROUTE_TASK_NICE=10):
        assert _niceness_in_a_thread() == max(10, before)
    # Only the task thread changed: this (request) thread and the process keep theirs.
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before


def test_zero_leaves_the_task_threads_as_they_are():
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with override_settings(OMNIROUTE_TASK_NICE=0):
        assert _niceness_in_a_thread() == before


def test_a_process_started_nicer_is_never_made_less_nice():
    def work(seen: list[int]) -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 15)  # as if started with nice 15
        lower_task_priority()
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    seen: list[int] = []
    with override_settings(OMNIROUTE_TASK_NICE=10):
        thread = threading.Thread(target=work, args=(seen,))
        thread.start()
        thread.join(10)
    assert seen == [15]
