"""``manage.py serve --workers N``: several web processes on one port, each answering /readyz with its
own pid, one supervised consumer, refused where the Studio's live events could not cross processes."""

from __future__ import annotations

import httpx

from tests.processes.conftest import Instance


def _pids(url: str, tries: int = 40) -> set[int]:
    """The pids that answer /readyz over fresh connections (the kernel spreads them over the workers)."""
    seen: set[int] = set()
    for _ in range(tries):
        with httpx.Client(timeout=10) as client:
            response = client.get(f"{url}/readyz", headers={"Connection": "close"})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "ready"
        assert body["checks"] == {"database": "ok", "queue": "ok", "embeddings": "ok"}
        seen.add(body["pid"])
        if len(seen) >= 2:
            break
    return seen


def test_two_web_workers_on_redis_answer_on_one_port_and_stop_cleanly(redis_instance: Instance):
    served = redis_instance.serve("--workers", "2", "--task-threads", "1")
    try:
        pids = _pids(served.url)
        assert len(pids) == 2, f"one worker answered every request: {pids}"
        assert served.process.pid not in pids  # the parent supervises (and runs the consumer)
        assert httpx.get(f"{served.url}/healthz", timeout=10).json() == {"status": "ok"}
    finally:
        code = served.stop()
    log = served.log()
    assert code == 0, log[-3000:]
    assert log.count("Huey consumer started") == 1  # one consumer for both web processes
    assert f"Background tasks: 1 worker thread(s) in this process (pid {served.process.pid})" in log
    assert "Background tasks: drained; 0 queued for the next consumer." in log
    for pid in pids:
        assert f"Finished server process [{pid}]" in log  # each web process shut down gracefully


def test_several_workers_with_the_in_memory_channel_layer_are_refused(instance: Instance):
    result = instance.manage("serve", "--port", "1", "--workers", "2", timeout=60)
    assert result.returncode == 1
    assert "--workers 2 needs a channel layer shared by processes" in result.stderr
    assert "Set REDIS_URL" in result.stderr


def test_the_number_of_web_workers_is_bounded(instance: Instance):
    result = instance.manage("serve", "--workers", "0", timeout=60)
    assert result.returncode != 0 and "--workers" in result.stderr
