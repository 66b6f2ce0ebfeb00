"""Several ``run_huey`` consumers on one Redis queue (db 15): every task runs exactly once, whichever
consumer takes it, and a SIGTERM drains each consumer."""

from __future__ import annotations

import re
import signal
import time

import redis

from tests.processes.conftest import Instance

TASKS = 40

ENQUEUE = """
import json
from memory.tasks.extraction import extract_from_exchange
ids = [extract_from_exchange(%(owner)r, "s%%d" %% n, "I love kayaking number %%d" %% n, "").id for n in range(%(tasks)d)]
print(json.dumps(ids))
"""
LEARNED = """
import json
from memory.models import Memory
print(json.dumps(Memory.objects.filter(owner_id=%r, key__startswith="preference:kayaking_number_").count()))
"""
# The consumer's "executed" line, in the settings' log format (run_huey also prints each line in Huey's).
EXECUTED = re.compile(
    r"^\S+ \S+ INFO huey memory\.tasks\.extraction\.extract_from_exchange: ([0-9a-f-]{36})"
    r"(?: \d+ retries)? executed in",
    re.MULTILINE,
)


def test_two_consumers_on_redis_run_each_task_exactly_once(redis_instance: Instance, redis_db: redis.Redis):
    owner, _ = redis_instance.api_key("consumed")
    consumers = [
        # -n: no periodic tasks here (one scheduler per deployment, docs/deployment.md)
        redis_instance.popen("run_huey", "--workers", "2", "-n", log=f"run_huey-{n}.log")
        for n in range(2)
    ]
    try:
        ids = redis_instance.python(ENQUEUE % {"owner": owner, "tasks": TASKS})
        assert len(set(ids)) == TASKS
        deadline = time.monotonic() + 120
        while redis_instance.python(LEARNED % owner) < TASKS:
            for process, log in consumers:
                assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the consumers did not finish the queue"
            time.sleep(0.5)
    finally:
        for process, _ in consumers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
    codes = [process.wait(timeout=60) for process, _ in consumers]
    logs = [log.read_text() for _, log in consumers]
    assert codes == [0, 0], "\n".join(text[-2000:] for text in logs)
    executed = [EXECUTED.findall(text) for text in logs]
    together = executed[0] + executed[1]
    assert sorted(together) == sorted(ids)  # each task once, none twice, none missing
    assert all(executed), f"one consumer ran every task: {[len(e) for e in executed]}"
    assert redis_db.llen("huey.redis.omniroute") == 0
    assert all("Shutting down gracefully" in text for text in logs)  # SIGTERM drains (HUEY_CONSUMER)
