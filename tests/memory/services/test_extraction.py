"""extraction_run and the extract_from_exchange task: what a finished exchange leaves in the store."""

from __future__ import annotations

import logging
import uuid

import pytest
from django.db import OperationalError
from django.utils import timezone

from memory.conf import update_memory_settings
from memory.models import ApiKey, Memory
from memory.services import extraction as service
from memory.services.extraction import (
    assistant_text_from_response,
    extraction_run,
    user_text_from_request,
)
from memory.tasks.extraction import enqueue_extraction, extract_from_exchange
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


def run(owner, user_text="", assistant_text="", session_id="s1"):
    return extraction_run(
        owner_id=str(owner.pk), session_id=session_id, user_text=user_text, assistant_text=assistant_text
    )


def test_it_stores_the_facts_of_both_sides_with_their_source(alice):
    update_memory_settings({"extractFromAssistant": True})
    stored = run(alice, "I prefer dark mode in my editor.", "Sure. I'll use Postgres for this project.")

    assert [(m.key, m.type, m.session_id, m.metadata["source"]) for m in stored] == [
        ("preference:dark_mode_in_my_editor", "factual", "s1", "user_message"),
        ("decision:postgres_for_this_project", "episodic", "s1", "llm_response"),
    ]
    assert Memory.objects.filter(owner=alice).count() == 2
    metadata = stored[0].metadata
    assert metadata["category"] == "preference"
    assert metadata["extractedAt"].endswith("Z")


def test_a_fact_said_by_both_sides_is_stored_once_from_the_user(alice):
    update_memory_settings({"extractFromAssistant": True})
    stored = run(alice, "I prefer vim.", "Noted: I prefer vim.")
    assert [(m.key, m.metadata["source"]) for m in stored] == [("preference:vim", "user_message")]


def test_a_repeated_fact_updates_the_existing_memory(alice):
    make_memory(alice, "old", key="preference:vim", metadata={"note": "kept"})
    (memory,) = run(alice, "I prefer vim.", session_id="s2")
    assert Memory.objects.filter(owner=alice).count() == 1
    assert memory.session_id == "" and memory.metadata["sessions"] == ["s2"]
    assert memory.metadata["note"] == "kept"
    assert memory.metadata["source"] == "user_message"


def test_a_fact_seen_in_another_session_stays_where_it_was_learned(alice):
    """Reference B10: the upsert used to move the memory into the newest session."""
    (first,) = run(alice, "I live in Lyon.", session_id="s1")
    run(alice, "I live in Lyon, by the way.", session_id="s2")
    (again,) = run(alice, "I live in Lyon.", session_id="s1")
    assert again.pk == first.pk and again.session_id == "s1"
    assert again.metadata["sessions"] == ["s2", "s1"]
    assert Memory.objects.filter(owner=alice).count() == 1


def test_a_dislike_does_not_overwrite_a_like(alice):
    run(alice, "I like cats.")
    run(alice, "I hate cats.")
    contents = sorted(Memory.objects.filter(owner=alice).values_list("content", flat=True))
    assert len(contents) == 2
    assert "Likes cats" in contents


def test_nothing_to_learn_stores_nothing(alice):
    assert run(alice, "The sky is blue.", "Indeed it is.") == []
    assert not Memory.objects.exists()


@pytest.mark.parametrize("owner_id", [str(uuid.uuid4()), "not-a-uuid", ""])
def test_an_unknown_owner_stores_nothing(owner_id):
    assert (
        extraction_run(owner_id=owner_id, session_id="s", user_text="I prefer vim.", assistant_text="") == []
    )
    assert not Memory.objects.exists()


def test_a_revoked_owner_stores_nothing(alice):
    ApiKey.objects.filter(pk=alice.pk).update(revoked_at=timezone.now())
    assert run(alice, "I prefer vim.") == []


def test_a_failing_fact_is_logged_and_the_others_are_stored(alice, monkeypatch, caplog):
    real_create = service.memory_create

    def flaky(item):
        if item.key == "preference:vim":
            raise ValueError("boom")
        return real_create(item)

    monkeypatch.setattr(service, "memory_create", flaky)
    with caplog.at_level(logging.ERROR, logger="memory.extraction"):
        stored = run(alice, "I prefer vim. I usually write tests first.")

    assert [m.key for m in stored] == ["pattern:write_tests_first"]
    (record,) = [r for r in caplog.records if r.getMessage() == "memory.extraction.failed"]
    assert (record.owner_id, record.key, record.source) == (str(alice.pk), "preference:vim", "user_message")


def test_a_transient_database_error_is_raised_for_a_retry(alice, monkeypatch):
    def locked(item):
        raise OperationalError("database is locked")

    monkeypatch.setattr(service, "memory_create", locked)
    with pytest.raises(OperationalError):
        run(alice, "I prefer vim.")


def test_the_task_runs_the_service(alice):
    extract_from_exchange(str(alice.pk), "s1", "I prefer vim.", "")
    assert Memory.objects.get(owner=alice).key == "preference:vim"


def test_the_task_is_retried_on_transient_errors():
    assert extract_from_exchange.retries == 2
    assert extract_from_exchange.retry_delay == 1


def test_enqueue_waits_for_the_commit(alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        enqueue_extraction(owner_id=alice.pk, session_id="s", user_text="I prefer vim.", assistant_text="")
    assert not Memory.objects.exists()
    assert len(callbacks) == 1
    callbacks[0]()
    assert Memory.objects.get(owner=alice).key == "preference:vim"


def test_enqueue_skips_blank_exchanges(alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        enqueue_extraction(owner_id=alice.pk, session_id="s", user_text="  ", assistant_text="")
    assert callbacks == []


def test_enqueue_never_raises(alice, monkeypatch, django_capture_on_commit_callbacks, caplog):
    import memory.tasks.extraction as tasks

    def broken(*args):
        raise ConnectionError("queue down")

    monkeypatch.setattr(tasks, "extract_from_exchange", broken)
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_extraction(owner_id=alice.pk, session_id="s", user_text="I prefer vim.", assistant_text="")
    assert "memory.extraction.enqueue_failed" in caplog.text


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"messages": [{"role": "user", "content": "  hi  "}]}, "hi"),
        (
            {"messages": [{"role": "user", "content": "first"}, {"role": "assistant", "content": "x"}]},
            "first",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": " a "}, {"type": "image_url"}, {"text": "b"}],
                    }
                ]
            },
            "a\nb",
        ),
        ({"messages": [{"role": "system", "content": "s"}]}, ""),
        ({"input": "  hello "}, "hello"),
        ({"input": [{"role": "user", "content": "q"}, {"type": "function_call"}]}, "q"),
        (None, ""),
    ],
)
def test_the_user_text_is_the_last_user_message(body, expected):
    assert user_text_from_request(body) == expected


def test_the_user_text_is_capped_to_the_tail():
    text = "a" * 70_000 + "END"
    assert user_text_from_request({"messages": [{"role": "user", "content": text}]}) == text[-65536:]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"choices": [{"message": {"content": "hello"}}]}, "hello"),
        (
            {
                "content": [
                    {"type": "text", "text": " a "},
                    {"type": "tool_use"},
                    {"type": "text", "text": "b"},
                ]
            },
            "a\nb",
        ),
        ({"output_text": "resp"}, "resp"),
        ({"choices": [{"message": {"content": None}}]}, ""),
        ([], ""),
    ],
)
def test_the_assistant_text_comes_from_the_first_known_shape(data, expected):
    assert assistant_text_from_response(data) == expected


@pytest.mark.django_db
def test_facts_from_the_assistant_are_not_learned_by_default(alice):
    from memory.conf import get_memory_settings
    from memory.services.extraction import extraction_run

    assert get_memory_settings().extractFromAssistant is False
    stored = extraction_run(
        owner_id=str(alice.pk),
        session_id="s",
        user_text="I prefer tea.",
        assistant_text="I always answer briefly.",
    )
    assert [m.metadata["source"] for m in stored] == ["user_message"]
