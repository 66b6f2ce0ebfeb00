"""manage.py summarize_memories, and the Huey periodic task."""

from __future__ import annotations

import io
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory.conf import update_memory_settings
from memory.models import Memory
from memory.tasks.lifecycle import summarize_memories_periodic
from tests.factories import make_memory
from tests.faults import break_inserts, write_locked


def run(*args) -> tuple[list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("summarize_memories", *args, stdout=out, stderr=err)
    return out.getvalue().splitlines(), err.getvalue()


def old(owner, content="An old fact. With two sentences. And three. And four.", days=40, **fields):
    return make_memory(owner, content, created_at=timezone.now() - timedelta(days=days), **fields)


@pytest.mark.django_db
def test_it_prints_one_line_per_owner(alice, bob):
    old(alice)
    old(alice, "Another.")
    lines, _ = run()
    summary = Memory.objects.get(owner=alice)
    assert lines == [
        f"{alice.pk} (alice): summarised 2 memories older than 30 days (16 tokens) into {summary.uuid}; deleted 2",
        f"{bob.pk} (bob): nothing older than 30 days",
    ]


@pytest.mark.django_db
def test_dry_run_and_one_api_key(alice, bob):
    old(alice, days=10)
    old(bob, days=10)
    lines, _ = run("--older-than-days", "7", "--api-key", str(alice.pk), "--dry-run")
    assert lines == [
        f"{alice.pk} (alice): would summarise 1 memories older than 7 days (14 tokens) (dry run)"
    ]
    assert Memory.objects.count() == 2


@pytest.mark.django_db
def test_budget_tokens_condenses_instead(alice):
    memory = old(alice, days=1)
    lines, _ = run("--budget-tokens", "0")
    assert lines == [f"{alice.pk} (alice): condensed 1 of 1 memories to fit 0 tokens, saving 3 tokens"]
    memory.refresh_from_db()
    assert memory.content == "An old fact. With two sentences. And three."


@pytest.mark.django_db
def test_budget_tokens_with_older_than_days_does_both(alice):
    old(alice, days=100)
    lines, _ = run("--budget-tokens", "1000", "--older-than-days", "30", "--dry-run")
    assert [line.split(": ", 1)[1] for line in lines] == [
        "would summarise 1 memories older than 30 days (14 tokens) (dry run)",
        "would condense 0 of 1 memories to fit 1000 tokens, saving 0 tokens (dry run)",
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than-days", "-1"], "must be between 0 and 365"),
        (["--older-than-days", "366"], "must be between 0 and 365"),
        (["--older-than-days", "soon"], "must be between 0 and 365"),
        (["--budget-tokens", "-1"], r"must be between 0 and 1000000000 \(a whole number\)"),
        (["--api-key", "nope"], "is not an API key id"),
        (["--api-key", "00000000-0000-0000-0000-0000000000ff"], "no such API key"),
        (["--api-key", "00000000-0000-0000-0000-000000000001"], "no such API key"),  # the health probe
    ],
)
def test_bad_arguments_are_clear_errors(args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)


@pytest.mark.django_db
def test_a_failing_owner_makes_it_exit_non_zero_after_the_others(alice, bob):
    old(alice)
    old(bob)
    break_inserts(f"NEW.owner_id = '{alice.pk.hex}'")  # alice's summary cannot be written
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match=f"failed for 1 API key\\(s\\): {alice.pk}"):
        call_command("summarize_memories", stdout=out, stderr=err)
    assert err.getvalue().strip() == f"{alice.pk} (alice): FAILED: OperationalError: malformed JSON"
    assert Memory.objects.get(owner=alice).type == "factual"  # rolled back: the original is kept
    assert Memory.objects.get(owner=bob).type == "semantic"
    assert out.getvalue().startswith(f"{bob.pk} (bob): summarised 1 memories older than 30 days")


def test_the_process_exits_non_zero_on_bad_arguments(instance):
    result = instance.manage("summarize_memories", "--older-than-days", "366", check=False)
    assert result.returncode != 0 and "must be between 0 and 365" in result.stderr


SEED = """
import json
from datetime import timedelta
from pathlib import Path
from django.utils import timezone
from memory.models import ApiKey, Memory
from memory.services.memories import MemoryInput, memory_bulk_create
owner = ApiKey.issue(name="{name}")[0]
memory_bulk_create([MemoryInput(owner=owner, content=f"fact {{i}}. two. three. four.") for i in range({n})])
Memory.objects.filter(owner=owner).update(created_at=timezone.now() - timedelta(days=90))
print(json.dumps(str(owner.pk)))
"""

COUNT = """
import json
from memory.models import Memory
rows = list(Memory.objects.filter(owner_id="{owner}").values_list("type", "metadata"))
print(json.dumps([[t, len(m.get("summarizedIds", []))] for t, m in rows]))
"""


def wait_until_blocked(processes, timeout: float = 90) -> bool:
    """Wait until every process sleeps in SQLite's busy handler (Linux: /proc/<pid>/wchan)."""
    if not Path("/proc/self/wchan").exists():
        time.sleep(10)
        return True
    deadline, streak = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        sleeping = all(Path(f"/proc/{p.pid}/wchan").read_text() == "hrtimer_nanosleep" for p in processes)
        streak = streak + 1 if sleeping else 0
        if streak >= 3:
            return True
        time.sleep(0.1)
    return False


@contextmanager
def both_runs_wait_for_the_rows(instance, owner: str) -> Iterator[Callable[[list], bool]]:
    """Another connection holds what both runs need until the block ends, and yields a check that
    both runs wait for it. SQLite: the write lock (each run waits in its busy handler). PostgreSQL: a
    row lock on every memory of ``owner`` (each run waits in its ``SELECT … FOR UPDATE``)."""
    url = instance.env.get("DATABASE_URL", "").strip()
    if not url:
        holder = sqlite3.connect(instance.db_path, isolation_level=None, timeout=30)
        holder.execute("BEGIN IMMEDIATE")
        try:
            yield wait_until_blocked
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        return
    import psycopg

    with psycopg.connect(url) as holder, psycopg.connect(url, autocommit=True) as watcher:
        holder.execute("SELECT seq FROM memories WHERE owner_id = %s FOR UPDATE", [owner])

        def waiting(processes, timeout: float = 90) -> bool:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                query = (
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = %s"
                )
                if watcher.execute(query, [url.rsplit("/", 1)[1]]).fetchone()[0] >= len(processes):
                    return True
                time.sleep(0.1)
            return False

        yield waiting
        holder.rollback()


def test_two_runs_at_once_do_not_compact_twice(instance):
    owner = instance.python(SEED.format(name="concurrent", n=2000))
    # Hold what both runs need so that both reach their write transaction and wait for it; when it is
    # released they race for it.
    env = {"OMNIROUTE_DB_BUSY_TIMEOUT_MS": "60000"}
    with both_runs_wait_for_the_rows(instance, owner) as blocked:
        runs = [instance.popen("summarize_memories", "--api-key", owner, env=env) for _ in range(2)]
        assert blocked(runs), "the two runs never waited for the lock together"
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    lines = sorted(out.strip().split(": ", 1)[1] for out, _ in outputs)
    assert lines[0] == "nothing older than 30 days"
    assert lines[1].startswith("summarised 2000 memories older than 30 days")
    assert instance.python(COUNT.format(owner=owner)) == [["semantic", 2000]]


@pytest.mark.django_db
def test_the_periodic_task_does_nothing_while_auto_summarize_is_off(alice):
    old(alice)
    assert summarize_memories_periodic.call_local() == {"skipped": True}
    assert Memory.objects.get(owner=alice).type == "factual"


@pytest.mark.django_db
def test_the_periodic_task_summarises_each_owner_by_retention_days(alice, bob, caplog):
    update_memory_settings({"autoSummarize": True, "retentionDays": 60})
    old(alice, days=61)
    old(alice, days=59)
    old(bob, days=90)
    with caplog.at_level("INFO", logger="memory.tasks"):
        counts = summarize_memories_periodic.call_local()
    assert counts == {"owners": 2, "summaries": 2, "summarized": 2, "failed": 0}
    assert Memory.objects.filter(owner=alice).count() == 2
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "summarize start: 2 API keys, memories older than 60 days"
    assert messages[-1] == "summarize end: 2 memories into 2 summaries, 0 keys failed"
    assert summarize_memories_periodic.call_local()["summarized"] == 0  # idempotent


@pytest.mark.django_db(transaction=True)
def test_the_periodic_task_lets_huey_retry_a_locked_database(caplog):
    from django.db import OperationalError

    from memory.models import ApiKey

    owner, _ = ApiKey.issue(name="carol")
    update_memory_settings({"autoSummarize": True})
    old(owner)
    with write_locked(), caplog.at_level("WARNING", logger="memory.tasks"):
        with pytest.raises(OperationalError, match="database is locked"):
            summarize_memories_periodic.call_local()
    (message,) = [m for m in caplog.messages if m.startswith(f"summarize interrupted at {owner.pk}")]
    assert "(database is locked" in message and message.endswith("Huey will retry")
    assert Memory.objects.get(owner=owner).type == "factual"
    task = summarize_memories_periodic.task_class
    assert (task.default_retries, task.default_retry_delay, task.default_retry_backoff) == (3, 60, 2)
    # The retry, once the other writer is done, finds the work still to do.
    assert summarize_memories_periodic.call_local()["summarized"] == 1


@pytest.mark.django_db
def test_the_periodic_task_keeps_going_after_a_non_transient_error(alice, bob, caplog):
    update_memory_settings({"autoSummarize": True})
    old(alice)
    old(bob)
    break_inserts(f"NEW.owner_id = '{alice.pk.hex}'")
    with caplog.at_level("ERROR", logger="memory.tasks"):
        counts = summarize_memories_periodic.call_local()
    assert counts == {"owners": 2, "summaries": 1, "summarized": 1, "failed": 1}
    (record,) = [r for r in caplog.records if r.getMessage() == f"summarize failed for {alice.pk}"]
    assert "malformed JSON" in str(record.exc_info[1])
    assert Memory.objects.get(owner=bob).type == "semantic"
