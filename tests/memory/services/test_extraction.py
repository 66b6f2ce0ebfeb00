"""extraction_run and the extract_from_exchange task: what a finished exchange leaves in the store."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import uuid

import pytest
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

from memory.conf import update_memory_settings
from memory.models import ApiKey, Memory
from memory.services.extraction import (
    assistant_text_from_response,
    extraction_run,
    user_text_from_request,
)
from memory.tasks.extraction import enqueue_extraction, extract_from_exchange
from tests.factories import make_memory
from tests.faults import break_inserts, refuse_inserts, write_locked

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


def test_a_failing_fact_is_logged_and_the_others_are_stored(alice, caplog):
    refuse_inserts("NEW.key = 'preference:vim'", "boom")  # the database refuses that one row
    with caplog.at_level(logging.ERROR, logger="memory.extraction"):
        stored = run(alice, "I prefer vim. I usually write tests first.")

    assert [m.key for m in stored] == ["pattern:write_tests_first"]
    assert [m.key for m in Memory.objects.filter(owner=alice)] == ["pattern:write_tests_first"]
    (record,) = [r for r in caplog.records if r.getMessage() == "memory.extraction.failed"]
    assert (record.owner_id, record.key, record.source) == (str(alice.pk), "preference:vim", "user_message")


def test_a_database_error_on_one_fact_is_raised_for_a_retry_not_skipped(alice, caplog):
    """An ``OperationalError`` met by a fact's write is not logged and skipped like a bad fact: it
    leaves the run (and its transaction), so that the task is retried."""
    break_inserts("NEW.key = 'preference:vim'")
    with caplog.at_level(logging.WARNING, logger="memory.extraction"):
        with pytest.raises(OperationalError, match="malformed JSON"):
            run(alice, "I usually write tests first. I prefer vim.")
    assert not Memory.objects.filter(owner=alice).exists()  # the fact before it is rolled back too
    (record,) = [r for r in caplog.records if r.getMessage() == "memory.extraction.transient_failure"]
    assert (record.key, record.source) == ("preference:vim", "user_message")
    assert "memory.extraction.failed" not in caplog.messages


@pytest.mark.django_db(transaction=True)
def test_a_locked_database_is_raised_for_a_retry():
    owner, _ = ApiKey.issue(name="carol")
    with write_locked(), pytest.raises(OperationalError, match="database is locked"):
        run(owner, "I prefer vim.")
    assert not Memory.objects.filter(owner=owner).exists()
    # The retry, once the other writer is done, stores the fact.
    assert [m.key for m in run(owner, "I prefer vim.")] == ["preference:vim"]


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


def test_enqueue_never_raises(tmp_path):
    """The queue is a Redis server that is not there (``REDIS_URL`` to a closed port), in a process of
    its own (the queue is chosen when Django starts): the failure is logged, the caller goes on."""
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "omniroute.settings",
        "OMNIROUTE_DATA_DIR": str(tmp_path),
        "OMNIROUTE_DB_PATH": str(tmp_path / "omniroute.sqlite3"),
        "REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "HUEY_IMMEDIATE": "false",
        "OMNIROUTE_LOG_LEVEL": "WARNING",
    }
    env.pop("OMNIROUTE_TEST_DB_PATH", None)
    code = (
        "from memory.tasks.extraction import enqueue_extraction\n"
        "enqueue_extraction(owner_id='00000000-0000-0000-0000-0000000000aa', session_id='s',"
        " user_text='I prefer vim.', assistant_text='')\n"
        "print('went on')\n"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "went on"
    assert "ERROR memory.extraction memory.extraction.enqueue_failed" in result.stderr
    assert "redis.exceptions.ConnectionError" in result.stderr


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
