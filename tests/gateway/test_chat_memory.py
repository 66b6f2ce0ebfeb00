"""POST /v1/chat/completions through the official SDK: what the upstream sees, and what is learned."""

from __future__ import annotations

import uuid

import pytest

from gateway.models import SystemRole, UpstreamProvider
from memory.conf import update_memory_settings
from memory.models import ApiKey, Memory
from tests.factories import make_memory
from tests.gateway.conftest import sdk

pytestmark = pytest.mark.django_db(transaction=True)

HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture
def alice_secret(transactional_db):
    key, secret = ApiKey.issue(name="alice")
    return key, secret


def chat(gateway, secret, messages=HELLO, model="stub-large", headers=None, **kwargs):
    return sdk(gateway, secret, **(headers or {})).chat.completions.create(
        model=model, messages=messages, **kwargs
    )


def stream_text(gateway, secret, messages=HELLO, model="stub-large", headers=None) -> str:
    stream = sdk(gateway, secret, **(headers or {})).chat.completions.create(
        model=model, messages=messages, stream=True
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def test_it_injects_the_keys_memories_as_a_leading_system_message(
    gateway, upstream, provider, memory_on, alice_secret
):
    alice, secret = alice_secret
    make_memory(alice, "Alice prefers dark mode")

    answer = chat(gateway, secret)

    assert answer.choices[0].message.content == "Hello from upstream."
    assert upstream.last.messages == [
        {"role": "system", "content": "Memory context: Alice prefers dark mode"},
        {"role": "user", "content": "Hello"},
    ]


def test_it_never_injects_another_keys_memories(gateway, upstream, provider, memory_on, alice_secret):
    alice, secret = alice_secret
    bob, bob_secret = ApiKey.issue(name="bob")
    make_memory(alice, "Alice uses vim")
    make_memory(bob, "Bob uses emacs")

    chat(gateway, secret)
    alice_saw = upstream.last.messages[0]["content"]
    chat(gateway, bob_secret)
    bob_saw = upstream.last.messages[0]["content"]

    assert alice_saw == "Memory context: Alice uses vim"
    assert bob_saw == "Memory context: Bob uses emacs"


def test_the_callers_system_prompt_stays_first(gateway, upstream, provider, memory_on, alice_secret):
    alice, secret = alice_secret
    make_memory(alice, "Alice writes Python")

    chat(gateway, secret, messages=[{"role": "system", "content": "Be brief."}, *HELLO])

    assert [m["role"] for m in upstream.last.messages] == ["system", "system", "user"]
    assert upstream.last.messages[0]["content"] == "Be brief."
    assert upstream.last.messages[1]["content"] == "Memory context: Alice writes Python"


def test_a_stream_gets_the_same_injection(gateway, upstream, provider, memory_on, alice_secret):
    alice, secret = alice_secret
    make_memory(alice, "Alice likes short answers")
    upstream.reply = "one two three"

    text = stream_text(gateway, secret)

    assert text == "one two three"
    assert upstream.last.json["stream"] is True
    assert upstream.last.messages[0] == {
        "role": "system",
        "content": "Memory context: Alice likes short answers",
    }


@pytest.mark.parametrize("value", ["true", "1", "yes", "TRUE"])
def test_the_no_memory_header_skips_injection_and_extraction(
    gateway, upstream, provider, memory_on, alice_secret, value
):
    alice, secret = alice_secret
    make_memory(alice, "Alice prefers dark mode")
    messages = [{"role": "user", "content": "I prefer light themes."}]

    chat(gateway, secret, messages=messages, headers={"x-omniroute-no-memory": value})

    assert upstream.last.messages == messages
    assert list(Memory.objects.values_list("content", flat=True)) == ["Alice prefers dark mode"]


def test_a_disabled_memory_forwards_the_request_unchanged(gateway, upstream, provider, alice_secret):
    alice, secret = alice_secret
    make_memory(alice, "Alice prefers dark mode")

    chat(gateway, secret, temperature=0.2, max_tokens=50)

    assert upstream.last.json == {
        "model": "stub-large",
        "messages": HELLO,
        "temperature": 0.2,
        "max_tokens": 50,
    }


def test_a_provider_without_a_system_role_gets_the_memory_as_a_user_message(
    gateway, upstream, memory_on, alice_secret
):
    alice, secret = alice_secret
    UpstreamProvider.objects.create(name="glm", base_url=upstream.base_url, is_default=True)
    make_memory(alice, "Alice speaks French")

    chat(gateway, secret, model="glm-4.5")

    assert upstream.last.messages == [
        {"role": "user", "content": "Memory context: Alice speaks French"},
        {"role": "user", "content": "Hello"},
    ]


def test_the_system_role_of_a_provider_is_data(gateway, upstream, memory_on, alice_secret):
    alice, secret = alice_secret
    UpstreamProvider.objects.create(
        name="my-proxy", base_url=upstream.base_url, is_default=True, system_role=SystemRole.USER
    )
    make_memory(alice, "Alice speaks French")

    chat(gateway, secret)

    assert upstream.last.messages[0] == {"role": "user", "content": "Memory context: Alice speaks French"}


def test_a_model_without_a_system_role_gets_a_user_message_behind_any_provider(
    gateway, upstream, provider, memory_on, alice_secret
):
    alice, secret = alice_secret
    make_memory(alice, "Alice speaks French")

    chat(gateway, secret, model="o1-mini")

    assert upstream.last.messages[0]["role"] == "user"


def test_it_forwards_with_the_providers_key_and_upstream_model(gateway, upstream, alice_secret):
    _, secret = alice_secret
    UpstreamProvider.objects.create(name="stub", base_url=upstream.base_url, is_default=True)
    UpstreamProvider.objects.create(
        name="zed", base_url=upstream.base_url, api_key="sk-zed", model_prefix="zed/", strip_prefix=True
    )

    chat(gateway, secret, model="zed/fast-1")

    assert upstream.last.path == "/v1/chat/completions"
    assert upstream.last.headers["authorization"] == "Bearer sk-zed"
    assert upstream.last.json["model"] == "fast-1"


def test_what_is_said_in_one_request_is_injected_in_the_next(
    gateway, upstream, provider, memory_on, alice_secret, extractions
):
    alice, secret = alice_secret

    chat(gateway, secret, messages=[{"role": "user", "content": "I prefer dark mode in my editor."}])
    extractions.wait()
    chat(gateway, secret, messages=[{"role": "user", "content": "Set up my editor."}])

    assert upstream.last.messages[0] == {
        "role": "system",
        "content": "Memory context: Prefers dark mode in my editor",
    }
    memory = Memory.objects.get(owner=alice)
    assert memory.key == "preference:dark_mode_in_my_editor"
    assert memory.metadata["source"] == "user_message"
    assert memory.metadata["category"] == "preference"


def test_a_stream_is_learned_from_its_assembled_answer(
    gateway, upstream, provider, memory_on, alice_secret, extractions
):
    alice, secret = alice_secret
    update_memory_settings({"extractFromAssistant": True})  # off by default
    upstream.reply = "Noted. I usually write tests first."

    stream_text(
        gateway, secret, messages=[{"role": "user", "content": "I'll use Postgres for this project."}]
    )
    extractions.wait()

    learned = {m.key: m.metadata["source"] for m in Memory.objects.filter(owner=alice)}
    assert learned == {
        "decision:postgres_for_this_project": "user_message",
        "pattern:write_tests_first": "llm_response",
    }


def test_the_session_header_sets_the_session_of_what_is_learned(
    gateway, upstream, provider, memory_on, alice_secret, extractions
):
    alice, secret = alice_secret

    chat(
        gateway,
        secret,
        messages=[{"role": "user", "content": "I prefer tabs over spaces."}],
        headers={"x-omniroute-session-id": "sess-42"},
    )
    extractions.wait()
    chat(gateway, secret, messages=[{"role": "user", "content": "I prefer green tea."}])
    extractions.wait(2)

    sessions = dict(Memory.objects.filter(owner=alice).values_list("key", "session_id"))
    assert sessions["preference:tabs_over_spaces"] == "sess-42"
    uuid.UUID(sessions["preference:green_tea"])  # without the header, a fresh id per exchange


def test_a_failed_answer_is_not_learned_from(gateway, upstream, provider, memory_on, alice_secret):
    _, secret = alice_secret
    upstream.status = 500

    with pytest.raises(Exception):  # noqa: B017 - the SDK error type is asserted in test_errors
        chat(gateway, secret, messages=[{"role": "user", "content": "I prefer dark mode."}])

    assert not Memory.objects.exists()


def test_memory_settings_turned_off_at_runtime_stop_injection(
    gateway, upstream, provider, memory_on, alice_secret
):
    alice, secret = alice_secret
    make_memory(alice, "Alice prefers dark mode")
    update_memory_settings({"enabled": False})

    chat(gateway, secret)

    assert upstream.last.messages == HELLO


def test_the_readme_example_with_default_settings(gateway, upstream, provider, alice_secret, extractions):
    """The README's example, with nothing set but memory on: the theme question gets the theme, and
    not another preference."""
    alice, secret = alice_secret
    update_memory_settings({"enabled": True})
    chat(gateway, secret, messages=[{"role": "user", "content": "I prefer PostgreSQL for databases."}])
    extractions.wait()
    chat(gateway, secret, messages=[{"role": "user", "content": "I prefer dark mode."}])
    extractions.wait(2)
    assert Memory.objects.filter(owner=alice).count() == 2
    chat(gateway, secret, messages=[{"role": "user", "content": "Which theme do I like?"}])
    system = upstream.last.messages[0]
    assert system["role"] == "system" and "dark mode" in system["content"]
    assert "PostgreSQL" not in system["content"]


@pytest.mark.parametrize("switch", ["header", "setting"])
def test_learning_can_be_switched_off_while_injection_stays_on(
    gateway, upstream, provider, memory_on, alice_secret, extractions, switch
):
    alice, secret = alice_secret
    make_memory(alice, "Alice prefers dark mode")
    headers = {"x-omniroute-no-learn": "true"} if switch == "header" else None
    if switch == "setting":
        update_memory_settings({"learningEnabled": False})
    chat(gateway, secret, messages=[{"role": "user", "content": "I live in Lyon."}], headers=headers)
    assert upstream.last.messages[0] == {
        "role": "system",
        "content": "Memory context: Alice prefers dark mode",
    }
    # A later exchange that may learn: its task runs after any the first one would have queued.
    update_memory_settings({"learningEnabled": True})
    chat(gateway, secret, messages=[{"role": "user", "content": "I work at Acme."}])
    extractions.wait(1)
    learned = set(Memory.objects.filter(owner=alice).values_list("content", flat=True))
    assert "Alice prefers dark mode" in learned and not any("Lyon" in text for text in learned)
    assert any("Acme" in text for text in learned)
