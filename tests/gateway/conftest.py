"""Gateway fixtures: the Django ASGI app and a recording upstream, both served for real on local ports.

Tests using them must be transactional (``pytest.mark.django_db(transaction=True)``): the gateway runs in
other threads with their own connections to the shared in-memory test database, so they only see
committed rows.
"""

from __future__ import annotations

import threading
import time

import openai
import pytest
from huey.contrib.djhuey import HUEY
from huey.signals import SIGNAL_COMPLETE, SIGNAL_ERROR

from gateway.models import UpstreamProvider
from gateway.workers import wait_for_after_response_work
from memory.conf import update_memory_settings
from tests.gateway.servers import ServerThread, UpstreamStub


@pytest.fixture(scope="session")
def upstream_server():
    stub = UpstreamStub()
    server = ServerThread(stub, name="upstream-stub").start()
    yield stub, server
    server.stop()


@pytest.fixture
def upstream(upstream_server) -> UpstreamStub:
    """The recording upstream, reset; ``upstream.base_url`` is its ``…/v1``."""
    stub, server = upstream_server
    stub.reset()
    stub.base_url = f"{server.url}/v1"
    return stub


@pytest.fixture(scope="session")
def gateway_server(django_db_setup):
    from omniroute.asgi import application

    server = ServerThread(application, name="gateway").start()
    yield server
    server.stop()


@pytest.fixture
def gateway(gateway_server, transactional_db):
    """The gateway's base URL (``http://127.0.0.1:<port>``). After the test, the gateway's after-response
    work is waited for, so it cannot race the database flush."""
    yield gateway_server.url
    time.sleep(0.05)  # a response's close() runs just after its last byte reached the client
    assert wait_for_after_response_work()


@pytest.fixture
def provider(transactional_db, upstream) -> UpstreamProvider:
    return UpstreamProvider.objects.create(
        name="stub",
        base_url=upstream.base_url,
        api_key="sk-upstream-secret",
        is_default=True,
        timeout_seconds=5,
    )


@pytest.fixture
def memory_on(transactional_db):
    """Memory enabled, newest-first recall (so what is injected does not depend on the query)."""
    update_memory_settings({"enabled": True, "strategy": "recent"})


class Extractions:
    """Counts finished extraction tasks (Huey runs them inline in tests, in the gateway's threads)."""

    def __init__(self):
        self.finished = 0
        self.errors: list[BaseException] = []
        self._cond = threading.Condition()

    def __call__(self, signal, task, exc=None):
        if task.name.endswith("extract_from_exchange"):
            with self._cond:
                self.finished += 1
                if exc is not None:
                    self.errors.append(exc)
                self._cond.notify_all()

    def wait(self, count: int = 1, timeout: float = 5.0) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: self.finished >= count, timeout), "extraction did not run"
        assert not self.errors, self.errors


@pytest.fixture
def extractions():
    tracker = Extractions()
    HUEY.signal(SIGNAL_COMPLETE, SIGNAL_ERROR)(tracker)
    yield tracker
    HUEY.disconnect_signal(tracker, SIGNAL_COMPLETE, SIGNAL_ERROR)


def sdk(gateway: str, secret: str, **headers: str) -> openai.OpenAI:
    """The official SDK pointed at the gateway (no retries: every status must be seen as it is)."""
    return openai.OpenAI(
        base_url=f"{gateway}/v1", api_key=secret, max_retries=0, timeout=15, default_headers=headers or None
    )
