"""Cognitive analysis on write: :func:`memory.cognitive.analyse` per memory (target p50 ≤ 1 ms), and the
contradiction check of one pair, each next to a floor measured in the same run.

Two corpora: the synthetic memories the other benchmarks write (``bench.corpus``), and the statements of
the labelled contradiction set (``tests/memory/cognitive/data/contradictions.json``), which read like
what users tell an assistant. The floor is one pass of the cheapest thing any analysis does with a text
(lower-casing it and splitting it into words): the ratio says how much the rules cost beyond reading the
text at all, whatever the machine's speed. The samples of the two alternate in blocks, so that the load
of a shared machine weighs on both alike.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from bench.corpus import memories
from bench.stats import summary

DATA = (
    Path(__file__).resolve().parent.parent / "tests" / "memory" / "cognitive" / "data" / "contradictions.json"
)
ROUNDS = 3
_WORDS = re.compile(r"\w+")


def _floor(text: str) -> object:
    return _WORDS.findall(text.lower())


def _alternating(
    calls: dict[str, Callable[[str], object]], texts: list[str], block: int = 50
) -> dict[str, list[float]]:
    """Milliseconds per text of each call, measured in alternating blocks (who goes first alternates)."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for text in texts[:50]:  # warm-up: compiled patterns, caches
        for call in calls.values():
            call(text)
    chunks = [texts[i : i + block] for i in range(0, len(texts), block)]
    for _ in range(ROUNDS):
        for index, chunk in enumerate(chunks):
            names = list(calls) if index % 2 == 0 else list(reversed(calls))
            for name in names:
                call = calls[name]
                for text in chunk:
                    started = time.perf_counter()
                    call(text)
                    samples[name].append((time.perf_counter() - started) * 1000)
    return samples


def run() -> dict:
    from memory.cognitive import Statement, analyse, check

    pairs = json.loads(DATA.read_text(encoding="utf-8"))["pairs"]
    statements = [p[side]["content"] for p in pairs for side in ("old", "new")]
    corpora = {"synthetic": memories(2_000, seed=5), "user statements": statements}
    results: dict = {}
    for name, texts in corpora.items():
        samples = _alternating(
            {"analyse": lambda t: analyse(t, type="factual", source="user_message"), "floor": _floor}, texts
        )
        ours, floor = summary(samples["analyse"]), summary(samples["floor"])
        ratio = ours["p50"] / floor["p50"] if floor["p50"] else float("nan")
        print(
            f"analyse, {name} ({len(texts)} texts × {ROUNDS}): p50 {ours['p50']:.3f} ms, p95 {ours['p95']:.3f} ms "
            f"(target p50 ≤ 1 ms); floor (lower + split) p50 {floor['p50']:.4f} ms; ×{ratio:,.0f} floor",
            flush=True,
        )
        results[f"analyse_{name.replace(' ', '_')}"] = {
            **ours,
            "floor_p50": floor["p50"],
            "ratio": round(ratio, 1),
        }

    def stamp(value: str) -> datetime:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))

    statement_pairs = [
        (
            Statement(p["old"]["content"], p["old"]["key"], p["old"]["type"], stamp(p["old"]["created_at"])),
            Statement(p["new"]["content"], p["new"]["key"], p["new"]["type"], stamp(p["new"]["created_at"])),
        )
        for p in pairs
    ]
    timings = []
    for _ in range(ROUNDS):
        for old, new in statement_pairs:
            started = time.perf_counter()
            check(old, new)
            timings.append((time.perf_counter() - started) * 1000)
    checked = summary(timings)
    print(
        f"check, {len(statement_pairs)} labelled pairs × {ROUNDS}: p50 {checked['p50']:.3f} ms, p95 {checked['p95']:.3f} ms"
    )
    results["check"] = checked
    return results
