"""The gateway with a key whose memories live with a provider: recall, injection and learning go to
the provider (never to this database's rows), and a provider that is down never fails the chat.

Real servers: the gateway (omniroute.asgi) and the recording upstream of ``tests/gateway``, Redis at
127.0.0.1:6379, a local LanceDB directory, the in-process store.
"""

from __future__ import annotations

import logging
import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from huey.contrib.djhuey import HUEY
from huey.signals import SIGNAL_RETRYING

from gateway.chat import route_and_inject
from memory import store
from memory.backends.base import BackendUnavailable, MemoryDraft
from memory.conf import get_memory_settings, update_memory_settings
from memory.models import Memory
from memory.retrieval.chat import chat_retrieval, retrieve_for_chat
from memory.services.extraction import extraction_run
from memory.services.memories import MemoryInput
from memory.tasks.extraction import extract_from_exchange
from tests.gateway import conftest as gateway_fixtures
from tests.gateway.conftest import sdk
from tests.memory.providers import provider_keys
from tests.memory.providers.provider_keys import manager

# The fixtures of tests/gateway (a real gateway, the recording upstream) and of this package.
upstream_server = gateway_fixtures.upstream_server
upstream = gateway_fixtures.upstream
gateway_server = gateway_fixtures.gateway_server
gateway = gateway_fixtures.gateway
provider = gateway_fixtures.provider
memory_on = gateway_fixtures.memory_on
extractions = gateway_fixtures.extractions
providers = provider_keys.providers

pytestmark = pytest.mark.django_db(transaction=True)

TYPES = ["inmemory", "redis", "lancedb"]
HELLO = [{"role": "user", "content": "Hello"}]


def chat(gateway, secret, messages=HELLO, **headers):
    return sdk(gateway, secret, **headers).chat.completions.create(model="stub-large", messages=messages)


@pytest.mark.parametrize("provider_type", TYPES)
def test_the_keys_provider_memories_are_injected(
    gateway, upstream, provider, memory_on, providers, provider_type
):
    alice, secret = providers.key(providers.provider(provider_type))
    store.memory_create(MemoryInput(owner=alice, content="Alice prefers dark mode", key="pref:theme"))

    answer = chat(gateway, secret)

    assert answer.choices[0].message.content == "Hello from upstream."
    assert upstream.last.messages == [
        {"role": "system", "content": "Memory context: Alice prefers dark mode"},
        {"role": "user", "content": "Hello"},
    ]
    assert not Memory.objects.exists()


@pytest.mark.parametrize("provider_type", TYPES)
def test_hybrid_recall_ranks_on_the_provider_within_the_budget(transactional_db, providers, provider_type):
    update_memory_settings({"enabled": True, "strategy": "hybrid", "maxTokens": 2000})
    alice, _ = providers.key(providers.provider(provider_type))
    for content in (
        "Alice's cat is called Miso",
        "Alice drives a blue bicycle to work",
        "Alice is allergic to peanuts",
    ):
        store.memory_create(MemoryInput(owner=alice, content=content))

    result = retrieve_for_chat(api_key=alice, query="What is the name of my cat?")

    assert result.memories[0].content == "Alice's cat is called Miso"
    assert result.resolution["provider"] == alice.provider.name
    assert result.resolution["providerType"] == provider_type
    assert result.resolution["backendFallbacks"] == []
    assert "keyword" in result.resolution["rankings"] or result.resolution["rankings"] == ["hybrid"]
    assert all(m.seq is None for m in result.memories)  # records of the provider, no rows


def test_the_budget_and_session_scope_apply_on_a_provider(transactional_db, providers):
    alice, _ = providers.key(providers.provider("inmemory"))
    for content in ("Alice likes tea", "Alice likes coffee", "Alice likes cocoa"):  # 4, 5, 5 tokens
        store.memory_create(MemoryInput(owner=alice, content=content, session_id="s1"))
    store.memory_create(MemoryInput(owner=alice, content="Alice likes jazz", session_id="s2"))
    update_memory_settings({"enabled": True, "strategy": "recent", "maxTokens": 10, "scope": "session"})

    in_s1 = retrieve_for_chat(api_key=alice, query="hi", session_id="s1")
    in_s2 = retrieve_for_chat(api_key=alice, query="hi", session_id="s2")

    # Newest first until the next one would pass the 10-token budget.
    assert [m.content for m in in_s1.memories] == ["Alice likes cocoa", "Alice likes coffee"]
    assert in_s1.total_tokens == 10
    assert [m.content for m in in_s2.memories] == ["Alice likes jazz"]


def test_two_keys_on_one_provider_never_see_each_other(gateway, upstream, provider, memory_on, providers):
    shared = providers.provider("redis")
    alice, alice_secret = providers.key(shared, name="alice")
    bob, bob_secret = providers.key(shared, name="bob")
    store.memory_create(MemoryInput(owner=alice, content="Alice uses vim"))
    store.memory_create(MemoryInput(owner=bob, content="Bob uses emacs"))

    chat(gateway, alice_secret)
    alice_saw = upstream.last.messages[0]["content"]
    chat(gateway, bob_secret)
    bob_saw = upstream.last.messages[0]["content"]

    assert alice_saw == "Memory context: Alice uses vim"
    assert bob_saw == "Memory context: Bob uses emacs"


@pytest.mark.parametrize("provider_type", TYPES)
def test_a_chat_learns_into_the_provider_not_into_rows(
    gateway, upstream, provider, memory_on, extractions, providers, provider_type
):
    update_memory_settings({"enabled": True, "strategy": "recent", "learningEnabled": True})
    alice, secret = providers.key(providers.provider(provider_type))

    chat(
        gateway,
        secret,
        [{"role": "user", "content": "I prefer light themes."}],
        **{"x-omniroute-session-id": "s1"},
    )
    extractions.wait()

    learned = store.all_records(manager(alice), alice.pk)
    assert [(r.content, r.session_id) for r in learned] == [("Prefers light themes", "s1")]
    assert learned[0].metadata["source"] == "user_message"
    assert not Memory.objects.exists()

    # Learned again in another session: one record, which keeps its first session and lists both.
    chat(
        gateway,
        secret,
        [{"role": "user", "content": "I prefer light themes."}],
        **{"x-omniroute-session-id": "s2"},
    )
    extractions.wait(2)
    again = store.all_records(manager(alice), alice.pk)
    assert len(again) == 1 and again[0].id == learned[0].id
    assert again[0].session_id == "s1" and again[0].metadata["sessions"] == ["s1", "s2"]

    # And the next chat recalls it from the provider.
    chat(gateway, secret)
    assert upstream.last.messages[0] == {
        "role": "system",
        "content": "Memory context: Prefers light themes",
    }


def test_a_native_key_plans_natively_and_reads_no_provider_table(transactional_db, providers):
    update_memory_settings({"enabled": True, "strategy": "hybrid"})
    native, _ = providers.key(None)
    on_provider, _ = providers.key(providers.provider("inmemory"), name="bob")
    settings = get_memory_settings()

    assert chat_retrieval(api_key=native, query="q", session_id=None, settings=settings).on_provider is False
    assert (
        chat_retrieval(api_key=on_provider, query="q", session_id=None, settings=settings).on_provider is True
    )
    with CaptureQueriesContext(connection) as queries:
        retrieve_for_chat(api_key=native, query="what do I like?", settings=settings)
    assert not [q["sql"] for q in queries if "provider" in q["sql"].lower()]


# -- a provider that is down ----------------------------------------------------------------------------


def test_a_provider_down_skips_memory_and_the_chat_is_answered(
    gateway, upstream, provider, memory_on, providers, caplog
):
    alice, secret = providers.key(providers.down_redis())

    answer = chat(gateway, secret)

    assert answer.choices[0].message.content == "Hello from upstream."
    assert upstream.last.messages == HELLO  # nothing injected

    with caplog.at_level(logging.WARNING, logger="gateway.chat"):
        routed = route_and_inject(
            api_key=alice, body={"model": "stub-large", "messages": HELLO}, session_id=None
        )
    assert routed.recalled is False and routed.injected is False
    assert routed.resolution == {
        "error": "recall skipped: the key's memory provider is unavailable",
        "provider": "redis-down",
    }
    assert "gateway.memory.provider_unavailable" in caplog.messages


def test_recall_falls_back_and_says_so(transactional_db, providers):
    update_memory_settings({"enabled": True, "strategy": "hybrid"})
    spare = providers.provider("inmemory", name="spare")
    alice, _ = providers.key(providers.down_redis(), fallbacks=(spare,))
    manager(alice).fallbacks[0].store(MemoryDraft(owner=alice.pk, content="Alice's cat is called Miso"))

    result = retrieve_for_chat(api_key=alice, query="what is my cat called?")

    assert [m.content for m in result.memories] == ["Alice's cat is called Miso"]
    assert result.resolution["provider"] == "redis-down"
    used = {(e["failed"], e["used"]) for e in result.resolution["backendFallbacks"]}
    assert used == {("redis-down", "spare")}


def test_learning_with_the_provider_down_is_logged_and_retried_by_the_queue(
    transactional_db, providers, caplog
):
    update_memory_settings({"enabled": True, "learningEnabled": True})
    alice, _ = providers.key(providers.down_redis())

    with caplog.at_level(logging.WARNING, logger="memory.extraction"), pytest.raises(BackendUnavailable):
        extraction_run(
            owner_id=str(alice.pk), session_id="s1", user_text="I prefer light themes.", assistant_text=""
        )
    assert "memory.extraction.transient_failure" in caplog.messages

    retried = threading.Event()

    def on_retry(signal, task, exc=None):
        if task.name.endswith("extract_from_exchange"):
            retried.set()

    HUEY.signal(SIGNAL_RETRYING)(on_retry)
    try:
        extract_from_exchange(str(alice.pk), "s1", "I prefer light themes.", "")
    finally:
        HUEY.disconnect_signal(on_retry, SIGNAL_RETRYING)
    assert retried.is_set()  # Huey scheduled the retry (1 s later, twice at most)
    assert any(t.name.endswith("extract_from_exchange") for t in HUEY.scheduled())
    assert not Memory.objects.exists()


def test_learning_with_the_provider_down_is_kept_on_the_fallback(
    gateway, upstream, provider, memory_on, extractions, providers
):
    update_memory_settings({"enabled": True, "strategy": "recent", "learningEnabled": True})
    spare = providers.provider("inmemory", name="spare")
    alice, secret = providers.key(providers.down_redis(), fallbacks=(spare,))

    chat(gateway, secret, [{"role": "user", "content": "I prefer light themes."}])
    extractions.wait()

    held = manager(alice)
    kept = store.all_records(held, alice.pk)  # the primary is down: listed from the fallback
    assert [r.content for r in kept] == ["Prefers light themes"]
    assert [(w.action, w.holder) for w in held.pending()] == [("store", "spare")]
    assert not Memory.objects.exists()
