"""SIGTERM on ``manage.py serve`` drains instead of dropping: the answers already sent still enqueue
their extraction, the task running finishes, the queued ones stay in the durable queue (here the SQLite
file) for the next consumer, and the command exits 0. No exchange is lost."""

from __future__ import annotations

import json
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.gateway.servers import ServerThread, UpstreamStub
from tests.processes.conftest import REDIS_TEST_URL, Instance, make_instance

CHATS = 40
PREFIX = "preference:kayaking_number_"
CHATS_COUNTED = 6

STATE = """
import json
from huey.contrib.djhuey import HUEY
import memory.tasks  # the registry the queued messages name
from memory.models import Memory
learned = Memory.objects.filter(owner_id=%r, key__startswith=%r).count()
names = [HUEY.deserialize_task(item).name for item in HUEY.storage.enqueued_items()]
print(json.dumps([learned, sum("extract_from_exchange" in name for name in names), len(names)]))
"""


@pytest.fixture
def upstream():
    server = ServerThread(UpstreamStub(reply="Noted."), name="drain-upstream").start()
    yield server
    server.stop()


def _chat(url: str, secret: str, n: int) -> int:
    body = {"model": "stub-large", "messages": [{"role": "user", "content": f"I love kayaking number {n}"}]}
    headers = {"Authorization": f"Bearer {secret}", "x-omniroute-session-id": f"s{n}"}
    return httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers, timeout=60).status_code


def test_sigterm_drains_running_tasks_and_keeps_queued_ones(tmp_path, migrated_template, upstream):
    instance: Instance = make_instance(
        tmp_path / "instance",
        migrated_template,
        MEMORY_ENABLED="true",
        UPSTREAM_BASE_URL=f"{upstream.url}/v1",
    )
    try:
        owner, secret = instance.api_key("drain")
        served = instance.serve("--task-threads", "1")
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda n: _chat(served.url, secret, n), range(CHATS)))
        assert statuses == [200] * CHATS
        code = served.stop()  # SIGTERM at once: extractions are running and queued
        log = served.log()
        assert code == 0, log[-3000:]
        assert "Finished server process" in log and "Shutting down gracefully" in log

        learned, queued, in_queue = instance.python(STATE % (owner, PREFIX))
        assert learned + queued == CHATS, (learned, queued, log[-3000:])  # none lost
        assert queued > 0, "every extraction ran before the signal: nothing was left to keep"
        # What serve reported is what the queue holds (extractions and the indexing they queued).
        assert f"Background tasks: drained; {in_queue} queued for the next consumer." in log, log[-2000:]

        # The next consumer (a run_huey of the same instance) learns what was left queued.
        consumer, consumer_log = instance.popen("run_huey", "--workers", "1", log="run_huey.log")
        deadline = time.monotonic() + 90
        while instance.python(STATE % (owner, PREFIX))[0] < CHATS:
            assert consumer.poll() is None, consumer_log.read_text()[-3000:]
            assert time.monotonic() < deadline, consumer_log.read_text()[-3000:]
            time.sleep(0.5)
        consumer.send_signal(signal.SIGTERM)  # graceful for run_huey too (HUEY_CONSUMER)
        assert consumer.wait(timeout=60) == 0, consumer_log.read_text()[-3000:]
        assert instance.python(STATE % (owner, PREFIX))[:2] == [CHATS, 0]
        keys = instance.python(
            "import json\nfrom memory.models import Memory\n"
            f"print(json.dumps(sorted(Memory.objects.filter(owner_id={owner!r}).values_list('key', flat=True))))"
        )
        assert keys == sorted(f"{PREFIX}{n}" for n in range(CHATS))
    finally:
        instance.close()


def test_the_access_counts_gathered_in_web_processes_are_written_at_shutdown(
    tmp_path, migrated_template, upstream, redis_db
):
    """The access counters of injected memories wait in memory for their batch (here an hour); each
    stopping web process of ``--workers 2`` writes its own at the ASGI shutdown (those processes end
    by the signal uvicorn re-raises, so no exit hook of theirs runs)."""
    instance = make_instance(
        tmp_path / "instance",
        migrated_template,
        REDIS_URL=REDIS_TEST_URL,
        MEMORY_ENABLED="true",
        MEMORY_ACCESS_FLUSH_SECONDS="3600",
        UPSTREAM_BASE_URL=f"{upstream.url}/v1",
    )
    try:
        owner, secret = instance.api_key("stats")
        token = instance.admin_token()
        served = instance.serve("--workers", "2", "--no-worker")
        created = httpx.post(
            f"{served.url}/api/memory",
            json={"apiKeyId": owner, "content": "Blue herons nest by the lake", "type": "factual"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert created.status_code == 201, created.text
        for _ in range(CHATS_COUNTED):
            body = {"model": "stub-large", "messages": [{"role": "user", "content": "Where do herons nest?"}]}
            response = httpx.post(
                f"{served.url}/v1/chat/completions",
                json=body,
                headers={"Authorization": f"Bearer {secret}", "Connection": "close"},
                timeout=30,
            )
            assert response.status_code == 200, response.text
        assert "Blue herons nest by the lake" in json.dumps(upstream.server.config.app.last.messages)
        assert served.stop() == 0
        counts = instance.python(
            "import json\nfrom memory.models import Memory\n"
            f"print(json.dumps(list(Memory.objects.filter(owner_id={owner!r}).values_list('access_count', flat=True))))"
        )
        assert counts == [CHATS_COUNTED]
    finally:
        instance.close()
