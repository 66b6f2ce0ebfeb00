"""The conversational dev set's format (memory.conversations) and eval_retrieval on conversations."""

import io
import json

import pytest
from django.core.management import call_command

from memory import conversations
from memory.models import ApiKey

SESSIONS = """\
## session 1 · 2024-01-14 · Sunday evening
Maya: Hey Tom! How was the move?
Tom: Exhausting. The new flat in Leeds is tiny though.
# a comment line is ignored

## session 2 · 2024-02-02
Maya: Did you get the cat yet?
Tom: Yes! Her name is Pickle, a grey tabby.
"""
QUESTIONS = [
    {
        "question": "Which city did Tom move to?",
        "kind": "single-hop",
        "evidence": ["s1t2"],
        "answer": "Leeds",
    },
    {
        "question": "What is the name of Tom's cat?",
        "kind": "single-hop",
        "evidence": ["s2t2"],
        "answer": "Pickle",
    },
    {"question": "What is Maya's favourite pizza?", "kind": "unanswerable", "evidence": [], "answer": None},
]


def write(directory, sessions=SESSIONS, questions=QUESTIONS, speakers=("Maya", "Tom")):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "conversation.json").write_text(json.dumps({"speakers": list(speakers), "description": "x"}))
    (directory / "sessions.txt").write_text(sessions)
    (directory / "questions.json").write_text(json.dumps(questions))
    return directory


def test_turns_are_numbered_per_session_with_their_date_and_speaker(tmp_path):
    conversation = conversations.load(write(tmp_path / "01-sample"))
    assert [t.id for t in conversation.turns] == ["s1t1", "s1t2", "s2t1", "s2t2"]
    turn = conversation.turns[3]
    assert (turn.session, turn.date.isoformat(), turn.speaker) == (2, "2024-02-02", "Tom")
    assert conversations.memory_text(turn) == "(2024-02-02) Tom: Yes! Her name is Pickle, a grey tabby."


@pytest.mark.parametrize(
    ("sessions", "questions", "error"),
    [
        ("## session 1 · 2024-01-14\nAnna: hi\n", [], "unknown speaker 'Anna'"),
        ("Maya: hi\n", [], "expected a session header"),
        ("## session 1 · 2024-02-01\nMaya: a\n## session 3 · 2024-03-01\nTom: b\n", [], "follows session 1"),
        ("## session 1 · 2024-02-01\nMaya: a\n## session 2 · 2024-01-01\nTom: b\n", [], "dated before"),
        (SESSIONS, [{"question": "q", "kind": "single-hop", "evidence": ["s9t1"]}], "names no turn"),
        (SESSIONS, [{"question": "q", "kind": "vibes", "evidence": ["s1t1"]}], "is not one of"),
        (SESSIONS, [{"question": "q", "kind": "unanswerable", "evidence": ["s1t1"]}], "have no evidence"),
        (SESSIONS, [{"question": "q", "kind": "temporal", "evidence": []}], "have no evidence"),
    ],
)
def test_a_malformed_conversation_says_where(tmp_path, sessions, questions, error):
    with pytest.raises(conversations.FormatError, match=error):
        conversations.load(write(tmp_path / "bad", sessions, questions))


def test_a_conversation_becomes_one_owner_with_one_memory_per_turn(tmp_path):
    dataset = conversations.to_dataset([conversations.load(write(tmp_path / "01-sample"))])
    assert dataset["owners"] == ["01-sample"] and len(dataset["memories"]) == 4
    memory = dataset["memories"][1]
    assert memory["content"] == "(2024-01-14) Tom: Exhausting. The new flat in Leeds is tiny though."
    assert memory["metadata"] == {"speaker": "Tom", "date": "2024-01-14", "session": 1}
    assert memory["session_id"] == "01-sample:s1"
    assert [q["kind"] for q in dataset["queries"]] == ["single-hop", "single-hop", "negative"]
    assert dataset["queries"][1]["relevant"] == ["01-sample:s2t2"]


def test_the_checked_in_dev_set_is_valid_and_large_enough():
    from django.conf import settings

    root = settings.BASE_DIR / "bench" / "data" / "conversations"
    found = conversations.load_all(root)
    assert len(found) >= 8
    assert sum(len(c.turns) for c in found) >= 4000
    questions = [q for c in found for q in c.questions]
    assert len(questions) >= 600
    assert {q["kind"] for q in questions} == set(conversations.KINDS)
    assert all(len(c.sessions) >= 15 for c in found)


@pytest.mark.django_db
def test_eval_retrieval_reads_a_conversation_and_reports_every_kind(tmp_path):
    out = io.StringIO()
    call_command(
        "eval_retrieval",
        str(write(tmp_path / "convs" / "01-sample").parent),
        "--strategies",
        "keyword",
        stdout=out,
        stderr=io.StringIO(),
    )
    text = out.getvalue()
    assert "== convs (4 memories, 3 queries)" in text and "strategy: keyword" in text
    overall = next(line for line in text.splitlines() if line.strip().startswith("overall"))
    n, r1, r5, r10, hit5 = overall.split()[1:]
    assert (n, r5, hit5) == ("2", "1.000", "1.000")  # both answerable questions find their turn
    assert "unanswerable given nothing" in text
    assert not ApiKey.objects.exists()  # the temporary owners are gone


@pytest.mark.parametrize(
    ("meta", "error"),
    [
        ("{}", '"speakers" must list'),
        ('{"speakers": ["Maya"]}', '"speakers" must list'),
        ("not json", "conversation.json"),
    ],
)
def test_a_broken_conversation_json_is_a_format_error(tmp_path, meta, error):
    directory = write(tmp_path / "bad")
    (directory / "conversation.json").write_text(meta)
    with pytest.raises(conversations.FormatError, match=error):
        conversations.load(directory)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("[]", "is not a JSON object"),
        ('{"owners": 1}', "has no 'owners' list"),
        ('{"owners": ["a"], "memories": [{"id": "1"}], "queries": []}', "memories #1 needs owner, content"),
        (
            '{"owners": ["a"], "memories": [], "queries": [{"owner": "b", "query": "q", "kind": "x", "relevant": []}]}',
            "names owner 'b'",
        ),
    ],
)
def test_eval_retrieval_names_what_is_wrong_with_a_dataset(tmp_path, content, error):
    from django.core.management import CommandError

    path = tmp_path / "set.json"
    path.write_text(content)
    with pytest.raises(CommandError, match=error):
        call_command("eval_retrieval", str(path), stdout=io.StringIO(), stderr=io.StringIO())
