"""A memory's importance, category and entities, from signals one can explain: :func:`analyse`.

Importance starts at :data:`BASE_IMPORTANCE` and each signal adds (or takes away) a fixed amount, written
in :attr:`MemoryAnalysis.reasons` ("type procedural +0.15"), then the sum is clamped to 0..1:

* **Emphasis** the writer put on it: "important", "always", "never", "remember that", "don't forget",
  "make sure", "must", "!" (and their French and Portuguese forms): +0.10 each kind found, at most
  :data:`MAX_EMPHASIS`.
* **Type**: an instruction (``procedural``) or a lasting fact (``factual``, ``long_term``, ``semantic``,
  ``entity``) outranks an episode (``episodic``: 0) and a ``short_term`` note (a penalty).
* **Source**: what the user said themself (``user_message``) outranks what the assistant said
  (``llm_response``: a penalty); a memory an application or an operator wrote on purpose (``api``,
  ``mcp``, ``studio``, ``import``) sits between.
* **Category**: who the user is (name, residence, job, family, relationship, pet) +0.10; their tastes
  and choices (preference, decision, habit pattern, tool) +0.05.
* **Repetition across sessions**: +0.05 for each session past the first it was seen in, at most +0.20.
* **Access**: +0.03 per doubling of the times it was retrieved, at most +0.15.

The category is the key's category when the key is an extraction key (``residence:leeds``), else the
class of the first fact the extraction rules read in the content, else ``instruction`` for a procedural
memory and ``note`` for any other. Entities: :func:`memory.cognitive.entities.find_entities`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from memory.cognitive.claims import facts_of
from memory.cognitive.entities import Entity, find_entities
from memory.extraction import REGISTRY

__all__ = ["BASE_IMPORTANCE", "MAX_EMPHASIS", "MemoryAnalysis", "analyse"]

BASE_IMPORTANCE = 0.3
MAX_EMPHASIS = 0.25


@dataclass(frozen=True, slots=True)
class MemoryAnalysis:
    """What :func:`analyse` finds: ``importance`` (0..1), ``category``, ``entities``, and ``reasons``: one
    line per signal that moved the importance, with its signed contribution."""

    importance: float
    category: str
    entities: list[Entity] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


_EMPHASIS = (
    (
        "important",
        re.compile(r"\b(?:important|importante|crucial|essential|essentiel|critical)\b", re.IGNORECASE),
    ),
    ("always", re.compile(r"\b(?:always|toujours|sempre)\b", re.IGNORECASE)),
    ("never", re.compile(r"\b(?:never|jamais|nunca)\b", re.IGNORECASE)),
    (
        "remember that",
        re.compile(
            r"\b(?:remember\s+(?:that|this)|don['’]?t\s+forget|do\s+not\s+forget|n['’]oublie\s+pas|"
            r"retiens|lembr[ae]-?(?:te|se)?|n[ãa]o\s+(?:te\s+)?esque[çc]a)\b",
            re.IGNORECASE,
        ),
    ),
    ("must", re.compile(r"\b(?:must|make\s+sure|il\s+faut|tem\s+que|precisa)\b", re.IGNORECASE)),
    ("!", re.compile(r"!")),
)
_TYPE_WEIGHT = {
    "procedural": 0.15,
    "factual": 0.10,
    "long_term": 0.10,
    "semantic": 0.05,
    "entity": 0.05,
    "episodic": 0.0,
    "short_term": -0.10,
}
_SOURCE_WEIGHT = {
    "user_message": 0.15,
    "user": 0.15,
    "api": 0.05,
    "mcp": 0.05,
    "studio": 0.05,
    "import": 0.05,
    "llm_response": -0.15,
    "assistant": -0.15,
}
_CATEGORY_WEIGHT = {
    "name": 0.10,
    "residence": 0.10,
    "job": 0.10,
    "family": 0.10,
    "relationship": 0.10,
    "pet": 0.10,
    "preference": 0.05,
    "decision": 0.05,
    "pattern": 0.05,
    "tool": 0.05,
}
_CATEGORIES = frozenset(family.category for family in REGISTRY)


def _category(content: str, type: str, key: str | None) -> str:
    if key and ":" in key:
        prefix = key.split(":", 1)[0]
        if prefix in _CATEGORIES:
            return prefix
    facts = facts_of(content)
    if facts:
        return facts[0].category
    return "instruction" if type == "procedural" else "note"


def analyse(
    content: str,
    *,
    type: str,
    source: str | None,
    key: str | None = None,
    seen_in_sessions: int = 1,
    access_count: int = 0,
) -> MemoryAnalysis:
    """The :class:`MemoryAnalysis` of a memory (see the module docstring). Pure and deterministic: the
    same arguments give the same analysis; an unknown type or source contributes nothing."""
    score = BASE_IMPORTANCE
    reasons = [f"base {BASE_IMPORTANCE:.2f}"]
    emphasis = 0.0
    for label, pattern in _EMPHASIS:
        if emphasis < MAX_EMPHASIS and pattern.search(content):
            step = min(0.10, MAX_EMPHASIS - emphasis)
            emphasis += step
            reasons.append(f"emphasis {label!r} +{step:.2f}")
    score += emphasis
    weight = _TYPE_WEIGHT.get(type, 0.0)
    if weight:
        score += weight
        reasons.append(f"type {type} {weight:+.2f}")
    weight = _SOURCE_WEIGHT.get(source or "", 0.0)
    if weight:
        score += weight
        reasons.append(f"source {source} {weight:+.2f}")
    category = _category(content, type, key)
    weight = _CATEGORY_WEIGHT.get(category, 0.0)
    if weight:
        score += weight
        reasons.append(f"category {category} {weight:+.2f}")
    if seen_in_sessions > 1:
        weight = min(0.20, 0.05 * (seen_in_sessions - 1))
        score += weight
        reasons.append(f"seen in {seen_in_sessions} sessions +{weight:.2f}")
    if access_count > 0:
        weight = min(0.15, 0.03 * math.log2(1 + access_count))
        score += weight
        reasons.append(f"accessed {access_count} times +{weight:.2f}")
    importance = round(min(1.0, max(0.0, score)), 3)
    return MemoryAnalysis(importance, category, find_entities(content), reasons)
