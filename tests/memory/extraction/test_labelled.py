"""Precision and recall of the rules on labelled user utterances (issue 11, point 7).

Each file holds utterances as users write them to an assistant, with the facts a reader would learn from
them (``class``, ``polarity``, a phrase the content must ``contain``); about a third are questions,
hypotheticals, quoted or reported speech, requests, the assistant's suggestions and talk about other
people, which must teach nothing. A learned fact is correct when it has the class and polarity of a
labelled fact of its utterance and its content contains that fact's phrase (case-insensitive).

* ``labelled_<lang>.json``: the set the rules were first written against (issue targets).
* ``fresh1_<lang>.json`` … ``fresh7_<lang>.json``: batches written later, each before the rules had
  seen it, to measure how the rules generalise. Each was then used to improve the rules, so it is
  in-sample now; what it measured while it was still unseen is the honest figure, kept here (precision /
  recall):

  ======== ================================== ============= ============= =============
  batch    unseen by                          en            fr            pt
  ======== ================================== ============= ============= =============
  fresh1   the rules before this work         0.970 / 0.657 0.951 / 0.731 0.933 / 0.840
  fresh2   round 1 (clauses, verb sets)       0.965 / 0.659 1.000 / 0.828 0.966 / 1.000
  fresh3   round 2                            0.862 / 0.463 1.000 / 0.944 1.000 / 1.000
  fresh4   round 3                            0.982 / 0.706 0.963 / 0.867 0.963 / 0.931
  fresh5   round 4 (the clause reader)        0.913 / 0.674 0.941 / 0.727 0.952 / 0.952
  fresh6   round 5 (before it)                0.957 / 0.782 1.000 / 0.875 1.000 / 0.880
  fresh7   round 5 (written after it)         0.959 / 0.855 0.963 / 0.893 1.000 / 1.000
  ======== ================================== ============= ============= =============

  fresh6 was written before round 5 read any rule, and scored with the rules of round 4 and again
  with those of round 5 (round 5 was written against the older sets and sentences of its own, not
  against fresh6): EN 0.962 / 0.885, FR 1.000 / 0.938, PT 1.000 / 0.960. fresh7 was written once round
  5 was frozen and scored once: no rule has been changed since. Both batches were then cleaned, and the
  figures above are of the cleaned batches: utterances that an older set already held, up to case and
  final punctuation ("lol ok", "I'm an only child", "odeio trânsito"; 7 + 3 + 7 in fresh6, 2 + 7 + 5
  in fresh7), were dropped, as they were not unseen; and three labels of fresh6 were brought in line
  with the older sets' conventions ("my husband and I" is family, not a relationship, and the shop they
  run a job; "my editor of choice is VS Code" a preference too; "je vis en Belgique, près de Liège"
  lives in Belgique as well as near Liège). As first written, fresh6 measured EN 0.932 / 0.784, FR
  0.966 / 0.875, PT 1.000 / 0.903 with round 4 and EN 0.939 / 0.886, FR 0.969 / 0.938, PT 1.000 / 0.968
  with round 5; fresh7 EN 0.959 / 0.857, FR 0.970 / 0.912, PT 1.000 / 1.000.

  fresh4 was scored after three labels were brought in line with the older sets before any rule was
  read ("switched from X to Y" is a decision, a sister named in passing is family): as first written it
  measured 0.938 / 0.690 in English. Where a message names several tools, or likes what "it" stands
  for, every one is a labelled fact; the older sets' labels that named only the first were completed
  when the clause reader came to read the others (English), and when round 5 came to read the rest of
  a French or Portuguese list (11 labels: "J'utilise surtout Figma et Notion", "Uso Excel e Power BI
  todo dia", …). The English per-class recall of the unseen batches (fresh6 with round 4's rules):

  ======== ======== ===== ====== === ==== ======= === ========== ============ ========= ====
  batch    decision event family job name pattern pet preference relationship residence tool
  ======== ======== ===== ====== === ==== ======= === ========== ============ ========= ====
  fresh4   0.71     0.53  1.00   0.74 0.33 1.00   0.80 0.75      0.70         0.69      0.53
  fresh5   0.62     0.67  0.83   0.50 0.80 1.00   0.50 0.69      0.67         0.75      0.67
  fresh6   1.00     0.89  1.00   0.58 0.50 1.00   1.00 0.77      0.80         0.75      0.64
  fresh7   1.00     1.00  0.88   0.70 0.80 1.00   0.75 0.92      1.00         0.75      0.70
  ======== ======== ===== ====== === ==== ======= === ========== ============ ========= ====

  Jobs and tools written without a verb the rules know ("I drive for Uber", "all my notes live in
  Notion") are what new batches still find.

  The clause reader (:mod:`memory.extraction.reader`) moved fresh5's English recall from 0.621 (round 3
  on the same batch) to 0.674 before it saw the batch: it generalises, but a new batch still finds
  phrasings it does not read.

  The floors below are what the current rules reach on each batch, less a margin of about 0.03 (one
  label on the small batches): a change that
  loses what was learned from a batch fails here. To measure generalisation again, write a new batch
  and measure it before changing any rule.

Run with ``-s`` to see the per-class tables.
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


@dataclass(frozen=True)
class LabelledSet:
    file: str
    min_utterances: int
    min_negative_share: float
    precision: float
    recall: float


SETS = {
    # The targets.
    "labelled_en": LabelledSet("labelled_en.json", 300, 0.25, 0.95, 0.85),
    "labelled_fr": LabelledSet("labelled_fr.json", 60, 0.25, 0.95, 0.85),
    "labelled_pt": LabelledSet("labelled_pt.json", 60, 0.25, 0.95, 0.85),
    # Measured floors (see the module docstring).
    "fresh1_en": LabelledSet("fresh1_en.json", 150, 0.30, 0.95, 0.95),
    "fresh1_fr": LabelledSet("fresh1_fr.json", 50, 0.30, 0.95, 0.96),
    "fresh1_pt": LabelledSet("fresh1_pt.json", 50, 0.30, 0.95, 0.97),
    "fresh2_en": LabelledSet("fresh2_en.json", 80, 0.30, 0.95, 0.94),
    "fresh2_fr": LabelledSet("fresh2_fr.json", 30, 0.30, 0.95, 0.96),
    "fresh2_pt": LabelledSet("fresh2_pt.json", 30, 0.30, 0.95, 0.96),
    "fresh3_en": LabelledSet("fresh3_en.json", 70, 0.30, 0.95, 0.87),
    "fresh3_fr": LabelledSet("fresh3_fr.json", 20, 0.30, 0.95, 0.94),
    "fresh3_pt": LabelledSet("fresh3_pt.json", 20, 0.30, 0.95, 0.94),
    "fresh4_en": LabelledSet("fresh4_en.json", 170, 0.30, 0.95, 0.97),
    "fresh4_fr": LabelledSet("fresh4_fr.json", 35, 0.30, 0.95, 0.96),
    "fresh4_pt": LabelledSet("fresh4_pt.json", 35, 0.30, 0.95, 0.96),
    "fresh5_en": LabelledSet("fresh5_en.json", 110, 0.30, 0.95, 0.94),
    "fresh5_fr": LabelledSet("fresh5_fr.json", 30, 0.30, 0.95, 0.95),
    "fresh5_pt": LabelledSet("fresh5_pt.json", 30, 0.30, 0.95, 0.95),
    # Their duplicates of older sets dropped, fresh6 is a little under a third negative.
    "fresh6_en": LabelledSet("fresh6_en.json", 110, 0.25, 0.95, 0.85),
    "fresh6_fr": LabelledSet("fresh6_fr.json", 40, 0.25, 0.95, 0.90),
    "fresh6_pt": LabelledSet("fresh6_pt.json", 35, 0.30, 0.95, 0.92),
    "fresh7_en": LabelledSet("fresh7_en.json", 100, 0.30, 0.95, 0.83),
    "fresh7_fr": LabelledSet("fresh7_fr.json", 35, 0.30, 0.95, 0.85),
    "fresh7_pt": LabelledSet("fresh7_pt.json", 35, 0.30, 0.95, 0.96),
}


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


def load(name: str) -> list[dict]:
    return json.loads((DATA / SETS[name].file).read_text(encoding="utf-8"))


def matches(fact: Fact, label: dict) -> bool:
    return (
        fact.category == label["class"]
        and fact.polarity == label["polarity"]
        and label["contains"].lower() in fact.content.lower()
    )


def score(name: str) -> Score:
    result = Score()
    for item in load(name):
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


def table(name: str, result: Score) -> str:
    lines = [f"{name}: class       learned correct labelled recalled precision recall"]
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


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_set_is_large_enough_and_a_third_negative(name):
    items = load(name)
    expected = SETS[name]
    assert len(items) >= expected.min_utterances
    negatives = sum(1 for item in items if not item["facts"])
    assert negatives >= expected.min_negative_share * len(items)
    assert len({item["text"] for item in items}) == len(items), "an utterance is listed twice"
    for item in items:
        for label in item["facts"]:
            assert set(label) == {"class", "polarity", "contains"}
            assert label["polarity"] in ("positive", "negative", None)


def test_the_fresh_batches_repeat_no_utterance_of_another_set():
    seen: dict[str, str] = {}
    for name in sorted(SETS):
        for item in load(name):
            assert item["text"] not in seen, (item["text"], seen.get(item["text"]), name)
            seen[item["text"]] = name


@pytest.mark.parametrize("name", sorted(SETS))
def test_no_match_is_skipped_for_want_of_an_anchor_word(name):
    # Extraction skips a rule whose anchor words are all absent: that must never hide a real match.
    for item in load(name):
        scanned = scan_text(item["text"])
        words = set(re.findall(r"[^\W\d_]+", scanned)) | set(re.findall(r"[a-z]+", scanned))
        for family in REGISTRY:
            for rule in family.rules:
                if rule.pattern.search(scanned):
                    assert not words.isdisjoint(rule.anchors), (rule.name, item["text"])


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_rules_reach_the_precision_and_recall_floors(name):
    result = score(name)
    print("\n" + table(name, result))
    expected = SETS[name]
    report = table(name, result) + "\n" + "\n".join(result.mistakes)
    assert result.precision() >= expected.precision, report
    assert result.recall() >= expected.recall, report
