"""Consolidation of one owner with 10,000 memories (``memory.services.consolidation``): the dry run's
plan and the run itself, timed, with the groups found against the duplicates planted.

The corpus is the synthetic memories of the other benchmarks (``bench.corpus``: template sentences
over a shared vocabulary, so most pairs are look-alikes that share words but not facts, and each ends
with its own note number) plus ``DUPLICATES`` copies of some of them said again in another case and
punctuation, each a known group of two. Vectors are the static source's, written inline as bulk
imports write them. A group that is not a planted pair is a false merge.
"""

from __future__ import annotations

import os
import random
import time

from bench.corpus import memories

N = int(os.environ.get("BENCH_SIZES", "10000").split(",")[-1])
DUPLICATES = 100


def _again(text: str, rng: random.Random) -> str:
    """The same statement said again: another case, another ending."""
    said = text.lower() if rng.random() < 0.5 else text.upper()
    return said.rstrip(".") + rng.choice(["!", "", " ."])


def run() -> dict:
    from memory.conf import update_memory_settings
    from memory.embeddings import runtime
    from memory.models import ApiKey, Memory
    from memory.services.consolidation import consolidate, consolidation_plan
    from memory.services.memories import MemoryInput, memory_bulk_create

    update_memory_settings({"embeddingSource": "static", "staticEnabled": True})
    runtime.reset()
    rng = random.Random(5)
    texts = memories(N - DUPLICATES, seed=3)
    planted = {i: _again(texts[i], rng) for i in rng.sample(range(len(texts)), DUPLICATES)}
    owner, _ = ApiKey.issue(name="bench-consolidation")
    memory_bulk_create([MemoryInput(owner=owner, content=t) for t in [*texts, *planted.values()]])
    pending = Memory.objects.filter(owner=owner, needs_reindex=True).count()
    expected = {(texts[i], again) for i, again in planted.items()}

    started = time.perf_counter()
    plan = consolidation_plan(owner)
    plan_s = time.perf_counter() - started
    found = {
        pair
        for g in plan.groups
        for pair in [(g.survivor.content, m.content) for m in g.merged]
        + [(m.content, g.survivor.content) for m in g.merged]
    }
    true_groups = sum(1 for pair in expected if pair in found)
    false_merges = sum(len(g.merged) for g in plan.groups) - true_groups
    print(
        f"plan of {plan.considered} memories ({pending} without a vector): {plan_s:.2f} s; groups found "
        f"{true_groups}/{len(expected)} planted, {false_merges} false merges, {len(plan.groups)} groups in all"
    )
    started = time.perf_counter()
    applied = consolidate(owner)
    run_s = time.perf_counter() - started
    left = Memory.objects.filter(owner=owner).count()
    print(f"run (plan again + merge {applied.merged_count}): {run_s:.2f} s; {left} memories left")
    return {
        "memories": plan.considered,
        "plan_seconds": round(plan_s, 3),
        "run_seconds": round(run_s, 3),
        "planted": len(expected),
        "found": true_groups,
        "false_merges": false_merges,
        "left": left,
    }
