"""A chat through the real gateway while the remote embedding endpoint hangs: answered, with the
memories keyword search finds, within one embedding timeout, and then without waiting at all."""

from __future__ import annotations

import time

import pytest

from memory.conf import update_memory_settings
from memory.models import ApiKey
from tests.factories import make_memory
from tests.gateway.conftest import (  # noqa: F401 - fixtures
    gateway,
    gateway_server,
    provider,
    sdk,
    upstream,
    upstream_server,
)
from tests.hardening.test_faults_remote import endpoint, remote  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)


def timed_chat(
    gateway_url: str, secret: str, question: str = "Which smoothie should I make?"
) -> tuple[float, str]:
    started = time.perf_counter()
    answer = sdk(gateway_url, secret).chat.completions.create(
        model="stub-large", messages=[{"role": "user", "content": question}]
    )
    return time.perf_counter() - started, answer.choices[0].message.content or ""


def test_chats_keep_their_memories_and_stop_waiting_once_the_circuit_opens(request):
    # By name: the fixtures come from the modules imported above.
    gateway_url = request.getfixturevalue("gateway")
    request.getfixturevalue("provider")
    upstream_stub = request.getfixturevalue("upstream")
    remote_endpoint = request.getfixturevalue("remote")
    update_memory_settings({"enabled": True, "strategy": "hybrid", "learningEnabled": False})
    owner, secret = ApiKey.issue(name="chatter")
    make_memory(owner, "My favourite smoothie is kiwi with mint")  # embedded now: the endpoint answers
    timed_chat(gateway_url, secret, "A smoothie, please")  # the first chat's start-up costs are not timed
    remote_endpoint.mode = "hang"

    timings = []
    for _ in range(4):
        elapsed, text = timed_chat(gateway_url, secret)
        assert text == "Hello from upstream."
        assert upstream_stub.last.messages[0] == {
            "role": "system",
            "content": "Memory context: My favourite smoothie is kiwi with mint",
        }
        timings.append(elapsed)
    # Two chats wait one 1 s timeout each (the circuit opens after 2 failures), the others none.
    assert all(0.9 <= t < 2.5 for t in timings[:2]), timings
    assert all(t < 0.6 for t in timings[2:]), timings
