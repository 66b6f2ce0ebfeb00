"""Precision and recall of the rules on labelled user utterances (issue 11, point 7).

Each ``labelled_<lang>.json`` holds utterances as users write them to an assistant, with the facts a
reader would learn from them (``class``, ``polarity``, a phrase the content must ``contain``); about a third
are questions, hypotheticals, quoted or reported speech, requests and talk about other people, which
must teach nothing. A learned fact is correct when it has the class and polarity of a labelled fact of
its utterance and its content contains that fact's phrase (case-insensitive).

Run with ``-s`` to see the per-class table.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memory.extraction import REGISTRY, Fact, extract_facts
from memory.extraction.scanner import scan_text

DATA = Path(__file__).parent

# (precision, recall) each language must reach.
TARGETS = {"en": (0.95, 0.85), "fr": (0.95, 0.85), "pt": (0.95, 0.85)}
MIN_UTTERANCES = {"en": 300, "fr": 60, "pt": 60}


@dataclass
class Score:
    learned: Counter[str] = field(default_factory=Counter)
    correct: Counter[str] = field(default_factory=Counter)
    labelled: Counter[str] = field(default_factory=Counter)
    recalled: Counter[str] = field(default_factory=Counter)
    mistakes: list[str] = field(default_factory=list)

    def precision(self, cls: str | None = None) -> float:
        learned = self.learned[cls] if cls else self.learned.total()
        correct = self.correct[cls] if cls else self.correct.total()
        return correct / learned if learned else 1.0

    def recall(self, cls: str | None = None) -> float:
        labelled = self.labelled[cls] if cls else self.labelled.total()
        recalled = self.recalled[cls] if cls else self.recalled.total()
        return recalled / labelled if labelled else 1.0


def load(lang: str) -> list[dict]:
    return json.loads((DATA / f"labelled_{lang}.json").read_text(encoding="utf-8"))


def matches(fact: Fact, label: dict) -> bool:
    return (
        fact.category == label["class"]
        and fact.polarity == label["polarity"]
        and label["contains"].lower() in fact.content.lower()
    )


def score(lang: str) -> Score:
    result = Score()
    for item in load(lang):
        facts = extract_facts(item["text"])
        labels = item["facts"]
        for fact in facts:
            result.learned[fact.category] += 1
            if any(matches(fact, label) for label in labels):
                result.correct[fact.category] += 1
            else:
                result.mistakes.append(f"  wrong  {item['text']!r} -> {fact.key} {fact.content!r}")
        for label in labels:
            result.labelled[label["class"]] += 1
            if any(matches(fact, label) for fact in facts):
                result.recalled[label["class"]] += 1
            else:
                result.mistakes.append(f"  missed {item['text']!r} -> {label}")
    return result


def table(lang: str, result: Score) -> str:
    lines = [f"{lang}: class           learned correct labelled recalled precision recall"]
    for cls in sorted(set(result.learned) | set(result.labelled)):
        lines.append(
            f"    {cls:<16}{result.learned[cls]:>8}{result.correct[cls]:>8}{result.labelled[cls]:>9}"
            f"{result.recalled[cls]:>9}{result.precision(cls):>10.2f}{result.recall(cls):>7.2f}"
        )
    lines.append(
        f"    {'all':<16}{result.learned.total():>8}{result.correct.total():>8}"
        f"{result.labelled.total():>9}{result.recalled.total():>9}"
        f"{result.precision():>10.2f}{result.recall():>7.2f}"
    )
    return "\n".join(lines)


@pytest.mark.parametrize("lang", sorted(TARGETS))
def test_the_labelled_set_is_large_and_one_third_negative(lang):
    items = load(lang)
    assert len(items) >= MIN_UTTERANCES[lang]
    negatives = sum(1 for item in items if not item["facts"])
    assert negatives >= len(items) // 4
    for item in items:
        for label in item["facts"]:
            assert set(label) == {"class", "polarity", "contains"}
            assert label["polarity"] in ("positive", "negative", None)


@pytest.mark.parametrize("lang", sorted(TARGETS))
def test_no_match_is_skipped_for_want_of_an_anchor_word(lang):
    # Extraction skips a rule whose anchor words are all absent: that must never hide a real match.
    for item in load(lang):
        scanned = scan_text(item["text"])
        words = set(re.findall(r"[^\W\d_]+", scanned)) | set(re.findall(r"[a-z]+", scanned))
        for family in REGISTRY:
            for rule in family.rules:
                if rule.pattern.search(scanned):
                    assert not words.isdisjoint(rule.anchors), (rule.name, item["text"])


@pytest.mark.parametrize("lang", sorted(TARGETS))
def test_the_rules_reach_the_precision_and_recall_targets(lang):
    result = score(lang)
    print("\n" + table(lang, result))
    precision, recall = TARGETS[lang]
    report = table(lang, result) + "\n" + "\n".join(result.mistakes)
    assert result.precision() >= precision, report
    assert result.recall() >= recall, report
