"""Access counters under many writers: several processes, each with several threads and its own
batching recorder, count accesses to the same memories; every access is counted exactly once, and
``last_accessed_at`` is the latest access whatever order the batches land in."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.services.usage import write_accesses
from tests.factories import make_memory
from tests.processes.conftest import BASE_DIR, Instance

PROCESSES = 4
THREADS = 4
ROUNDS = 150

HAMMER = """
import threading
from datetime import datetime, timedelta, timezone
from memory.models import Memory
from memory.services.usage import flush_accesses, record_access
seqs = list(Memory.objects.order_by("seq").values_list("seq", flat=True))
base = datetime(2030, 1, 1, tzinfo=timezone.utc)
def hammer(t):
    for i in range(%(rounds)d):
        # every memory once per round, the second twice; the instants differ per process and thread
        record_access([*seqs, seqs[1]], base + timedelta(seconds=%(process)d * 1000 + t * 100 + i %% 7))
threads = [threading.Thread(target=hammer, args=(t,)) for t in range(%(threads)d)]
for thread in threads: thread.start()
for thread in threads: thread.join()
flush_accesses()
print("done")
"""


def test_several_processes_hammering_the_counters_lose_and_double_nothing(instance: Instance):
    owner, _ = instance.api_key("counted")
    instance.python(
        "import json\nfrom memory.models import ApiKey\nfrom tests.factories import make_memory\n"
        f"owner = ApiKey.objects.get(pk={owner!r})\n"
        "for text in ('Otters hold hands', 'Crows remember faces', 'Bees dance'):\n"
        "    make_memory(owner, content=text)\n"
        "print(json.dumps(1))"
    )
    # Batches every 20 ms: many small transactions from every process, interleaved.
    env = {**instance.env, "MEMORY_ACCESS_FLUSH_SECONDS": "0.02"}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "shell",
                "--no-imports",
                "-c",
                HAMMER % {"rounds": ROUNDS, "threads": THREADS, "process": process},
            ],
            cwd=BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for process in range(PROCESSES)
    ]
    errors = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0 and out.strip().endswith("done"), err[-3000:]
        errors.append(err)
    rows = instance.python(
        "import json\nfrom memory.models import Memory\n"
        "print(json.dumps([[m.access_count, m.last_accessed_at.isoformat()] "
        "for m in Memory.objects.order_by('seq')]))"
    )
    per_round = PROCESSES * THREADS * ROUNDS
    assert [count for count, _ in rows] == [per_round, 2 * per_round, per_round], [e[-1500:] for e in errors]
    # The latest instant of all: process 3, thread 3, i % 7 == 6.
    latest = f"2030-01-01T00:{(3 * 1000 + 3 * 100 + 6) // 60:02d}:{(3 * 1000 + 3 * 100 + 6) % 60:02d}+00:00"
    assert {at for _, at in rows} == {latest}


@pytest.mark.django_db
def test_a_late_batch_never_sets_the_last_access_back(alice):
    memory = make_memory(alice, content="Herons fish at dawn")
    now = timezone.now()
    write_accesses({memory.seq: (2, now)})
    write_accesses({memory.seq: (3, now - timedelta(minutes=5))})  # an older batch from a slower process
    memory.refresh_from_db()
    assert memory.access_count == 5
    assert memory.last_accessed_at == now
