"""Conversational evaluation data: long two-person dialogues in dated sessions, with questions.

One directory per conversation (``bench/data/conversations/<name>/``):

- ``conversation.json``: ``{"speakers": ["Maya", "Tom"], "description": "..."}``;
- ``sessions.txt``: every session in order, each opened by a header line
  ``## session 3 · 2024-03-09`` (anything after the date is a free note), then one turn per line,
  ``Speaker: text``; blank lines and lines starting with ``#`` (other than headers) are ignored;
- ``questions.json``: a list of ``{"question", "kind", "evidence", "answer"}`` where ``kind`` is one
  of :data:`KINDS` and ``evidence`` lists turn ids (``s3t12``: session 3, its 12th turn); an
  ``unanswerable`` question has no evidence.

:func:`to_dataset` turns conversations into the ``shared/eval`` format that
``memory.evaluation`` runs: one owner per conversation, one memory per turn, written as the
benchmark stores turns (``(date) Speaker: text``), with the speaker, date and session in
metadata. ``python -m memory.conversations check|show|session DIR …`` helps the people who
write them.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

KINDS = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial", "unanswerable")
HEADER = re.compile(r"^##\s*session\s+(\d+)\s*[·|-]\s*(\d{4}-\d{2}-\d{2})\b.*$", re.IGNORECASE)
TURN = re.compile(r"^([^:\s][^:]{0,40}):\s+(\S.*)$")
TURN_ID = re.compile(r"^s(\d+)t(\d+)$")


class FormatError(ValueError):
    """A conversation file that does not follow the format (the message says where)."""


@dataclass
class Turn:
    id: str
    session: int
    date: date
    speaker: str
    text: str


@dataclass
class Conversation:
    name: str
    speakers: list[str]
    description: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[dict] = field(default_factory=list)

    @property
    def sessions(self) -> dict[int, list[Turn]]:
        out: dict[int, list[Turn]] = {}
        for turn in self.turns:
            out.setdefault(turn.session, []).append(turn)
        return out


def parse_sessions(text: str, speakers: list[str], *, where: str = "sessions.txt") -> list[Turn]:
    turns: list[Turn] = []
    session = day = None
    numbers: list[int] = []
    counter = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        header = HEADER.match(line)
        if header:
            session, day = int(header.group(1)), date.fromisoformat(header.group(2))
            if numbers and session != numbers[-1] + 1:
                raise FormatError(f"{where}:{lineno}: session {session} follows session {numbers[-1]}")
            if turns and day < turns[-1].date:
                raise FormatError(f"{where}:{lineno}: session {session} is dated before the one above")
            numbers.append(session)
            counter = 0
            continue
        if line.startswith("#"):
            continue
        match = TURN.match(line)
        if session is None or day is None or not match:
            raise FormatError(
                f"{where}:{lineno}: expected a session header or 'Speaker: text': {line[:60]!r}"
            )
        speaker, said = match.group(1).strip(), match.group(2).strip()
        if speaker not in speakers:
            raise FormatError(f"{where}:{lineno}: unknown speaker {speaker!r} (speakers: {speakers})")
        counter += 1
        turns.append(Turn(f"s{session}t{counter}", session, day, speaker, said))
    return turns


def load(directory: Path) -> Conversation:
    directory = Path(directory)
    meta = _json(directory / "conversation.json")
    speakers = meta.get("speakers") if isinstance(meta, dict) else None
    if (
        not isinstance(speakers, list)
        or len(speakers) != 2
        or not all(isinstance(s, str) and s for s in speakers)
    ):
        raise FormatError(
            f'{directory.name}/conversation.json: "speakers" must list the two speakers\' names'
        )
    conversation = Conversation(directory.name, speakers, str(meta.get("description", "")))
    conversation.turns = parse_sessions(
        _text(directory / "sessions.txt"), speakers, where=f"{directory.name}/sessions.txt"
    )
    path = directory / "questions.json"
    questions = _json(path) if path.exists() else []
    if not isinstance(questions, list):
        raise FormatError(f"{directory.name}/questions.json: expected a list of questions")
    ids = {turn.id for turn in conversation.turns}
    for number, question in enumerate(questions, 1):
        where = f"{directory.name}/questions.json #{number}"
        if not isinstance(question, dict):
            raise FormatError(f"{where}: expected an object")
        if not isinstance(question.get("question"), str) or not question["question"].strip():
            raise FormatError(f"{where}: no question text")
        if question.get("kind") not in KINDS:
            raise FormatError(f"{where}: kind {question.get('kind')!r} is not one of {KINDS}")
        evidence = question.get("evidence") or []
        if not isinstance(evidence, list):
            raise FormatError(f"{where}: evidence must be a list of turn ids")
        missing = [e for e in evidence if e not in ids]
        if missing:
            raise FormatError(f"{where}: evidence {missing} names no turn")
        if (question["kind"] == "unanswerable") != (not evidence):
            raise FormatError(f"{where}: unanswerable questions, and only they, have no evidence")
    conversation.questions = questions
    return conversation


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(f"{path.parent.name}/{path.name}: {exc}") from None


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise FormatError(f"{path.parent.name}/{path.name}: {exc}") from None


def load_all(root: Path) -> list[Conversation]:
    return [load(path) for path in sorted(Path(root).iterdir()) if (path / "conversation.json").exists()]


def memory_text(turn: Turn) -> str:
    """A turn as the benchmark stores it: ``(2024-03-09) Maya: text``."""
    return f"({turn.date.isoformat()}) {turn.speaker}: {turn.text}"


def to_dataset(conversations: list[Conversation], *, name: str = "conversations") -> dict:
    """The ``shared/eval`` dataset format: owners, memories (one per turn), queries."""
    memories, queries = [], []
    for conversation in conversations:
        for turn in conversation.turns:
            memories.append(
                {
                    "id": f"{conversation.name}:{turn.id}",
                    "owner": conversation.name,
                    "content": memory_text(turn),
                    "type": "episodic",
                    "session_id": f"{conversation.name}:s{turn.session}",
                    "created_at": f"{turn.date.isoformat()}T12:00:00Z",
                    "metadata": {
                        "speaker": turn.speaker,
                        "date": turn.date.isoformat(),
                        "session": turn.session,
                    },
                }
            )
        for number, question in enumerate(conversation.questions, 1):
            queries.append(
                {
                    "id": f"{conversation.name}:q{number}",
                    "owner": conversation.name,
                    "query": question["question"],
                    "kind": "negative" if question["kind"] == "unanswerable" else question["kind"],
                    "relevant": [f"{conversation.name}:{e}" for e in question.get("evidence") or []],
                }
            )
    return {
        "name": name,
        "owners": [c.name for c in conversations],
        "memories": memories,
        "queries": queries,
    }


def _summary(conversation: Conversation) -> str:
    kinds: dict[str, int] = {}
    for question in conversation.questions:
        kinds[question["kind"]] = kinds.get(question["kind"], 0) + 1
    sessions = conversation.sessions
    first, last = conversation.turns[0].date, conversation.turns[-1].date
    return (
        f"{conversation.name}: {len(sessions)} sessions ({first} … {last}), {len(conversation.turns)} turns, "
        f"{len(conversation.questions)} questions {dict(sorted(kinds.items()))}"
    )


def main(argv: list[str]) -> int:
    """``check DIR…`` validates and counts; ``show DIR ID…`` prints turns; ``session DIR N`` a session."""
    if len(argv) < 2 or argv[0] not in ("check", "show", "session"):
        print(main.__doc__, file=sys.stderr)
        return 2
    command, target, rest = argv[0], Path(argv[1]), argv[2:]
    try:
        if command == "check":
            found = [target] if (target / "conversation.json").exists() else None
            conversations = [load(p) for p in found] if found else load_all(target)
            for c in conversations:
                print(_summary(c))
            turns = sum(len(c.turns) for c in conversations)
            questions = sum(len(c.questions) for c in conversations)
            print(f"total: {len(conversations)} conversations, {turns} turns, {questions} questions")
            return 0
        conversation = load(target)
    except (FormatError, OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    by_id = {t.id: t for t in conversation.turns}
    if command == "show":
        for turn_id in rest:
            turn = by_id.get(turn_id)
            print(f"{turn_id}  {memory_text(turn)}" if turn else f"{turn_id}  (no such turn)")
    else:
        if len(rest) != 1 or not rest[0].isdigit() or int(rest[0]) not in conversation.sessions:
            print(f"error: name one session number, among 1..{len(conversation.sessions)}", file=sys.stderr)
            return 2
        for turn in conversation.sessions[int(rest[0])]:
            print(f"{turn.id:>7}  {turn.speaker}: {turn.text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
