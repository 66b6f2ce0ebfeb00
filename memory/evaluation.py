"""Retrieval quality on a labelled dataset (the format of shared/eval/dev-recall.json; conversations
are converted to it by ``memory.conversations``).

Each dataset owner is loaded under its own API key and every query runs as
its owner only (never a global scope). Any hit from another owner counts as
an isolation failure. Per query kind: recall at 1/5/10 (the share of a
query's relevant memories in its top k) and Hit@5 (whether any is). Per
strategy, "served" is what the gateway would do with its score floor: the
share of answerable queries that still get a memory, and the share of
unanswerable ones that get none (a confident non-answer). Questions that name a period
(``memory.retrieval.temporal``: "in June 2023", "last week") are also reported together as the
kind ``names-a-period``, beside their own kind.

``as_of="latest"`` asks each question as of its owner's newest memory (the moment just after the
conversation, which is when its questions would be asked), instead of today: recency (the
``composite`` strategy) and the periods a question names ("last week") then count from that moment.
A dataset's dates are long past today, where every memory's recency is about 0 and composite would
only replay hybrid.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from django.db import transaction
from django.utils import timezone

from memory.conf import MemorySettings
from memory.embeddings.runtime import shared_cache
from memory.models import ApiKey, Memory
from memory.retrieval.engine import retrieve
from memory.retrieval.temporal import question_period
from memory.services.indexing import reindex_all
from memory.services.memories import MemoryInput, memory_bulk_create

# name → (engine strategy, use vectors)
STRATEGIES = {
    "recent": ("exact", False),
    "fts": ("keyword", False),  # the former name of "keyword"
    "keyword": ("keyword", False),
    "vector": ("semantic", True),
    "hybrid": ("hybrid", True),
    "composite": ("composite", True),
}
KS = (1, 5, 10)
DATED = "names-a-period"


@dataclass
class StrategyReport:
    name: str
    recall: dict[str, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    hit5: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    served: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    negative_top1: list[float] = field(default_factory=list)
    answerable_top1: list[float] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    rerank_ms: list[float] = field(default_factory=list)
    reranked: int = 0
    isolation_failures: int = 0
    tiers: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def mean(self, kind: str, k: int) -> float:
        values = self.recall[kind][k]
        return sum(values) / len(values) if values else 0.0

    def summary(self) -> dict:
        kinds = sorted(self.recall)
        lat = sorted(self.latencies_ms)
        rerank = sorted(self.rerank_ms)
        return {
            "strategy": self.name,
            "recall": {
                kind: {f"R@{k}": round(self.mean(kind, k), 3) for k in KS}
                | {"Hit@5": round(_avg(self.hit5[kind]), 3), "n": len(self.recall[kind][1])}
                for kind in kinds
            },
            "served": {
                "answerableServed": round(_avg(self.served["answerable"]), 3),
                "unanswerableEmpty": round(1 - _avg(self.served["unanswerable"]), 3)
                if self.served["unanswerable"]
                else None,
            },
            "negativeTop1": _spread(self.negative_top1),
            "answerableTop1": _spread(self.answerable_top1),
            "latencyMs": {
                "p50": round(lat[len(lat) // 2], 2) if lat else None,
                "p95": round(lat[int(len(lat) * 0.95)], 2) if lat else None,
            },
            # The rerank stage alone, over the queries that ran one (eval_retrieval --rerank).
            "rerankMs": {"p50": round(rerank[len(rerank) // 2], 2), "applied": self.reranked}
            if rerank
            else None,
            "isolationFailures": self.isolation_failures,
            "tiers": dict(self.tiers),
        }


def _avg(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _spread(values: list[float]) -> dict:
    if not values:
        return {}
    return {"median": round(statistics.median(values), 4), "max": round(max(values), 4), "n": len(values)}


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def latest_per_owner(dataset: dict) -> dict[str, datetime]:
    """Each owner's newest memory date (``created_at``), for ``as_of="latest"``; owners whose memories
    carry no date are left out (they are asked now)."""
    latest: dict[str, datetime] = {}
    for row in dataset["memories"]:
        if row.get("created_at"):
            moment = _instant(row["created_at"])
            latest[row["owner"]] = max(moment, latest.get(row["owner"], moment))
    return latest


def load_dataset(dataset: dict, *, prefix: str) -> tuple[dict[str, ApiKey], dict[str, int]]:
    """Create one API key per dataset owner and its memories; returns (owners, memory id → seq)."""
    owners = {name: ApiKey.issue(name=f"{prefix}{name}")[0] for name in dataset["owners"]}
    items, ids = [], []
    for row in dataset["memories"]:
        items.append(
            MemoryInput(
                owner=owners[row["owner"]],
                content=row["content"],
                key=row.get("key") or None,
                type=row.get("type") or "factual",
                session_id=row.get("session_id") or "",
                metadata={**(row.get("metadata") or {}), "evalId": row["id"]},
            )
        )
        ids.append(row["id"])
    with transaction.atomic():
        result = memory_bulk_create(items)
        uuid_to_eval = dict(zip(result["ids"], ids, strict=True))
        created = {row["id"]: row.get("created_at") for row in dataset["memories"]}
        seqs = {}
        for memory in Memory.objects.filter(uuid__in=list(uuid_to_eval)):
            eval_id = uuid_to_eval[str(memory.uuid)]
            seqs[eval_id] = memory.seq
            if created.get(eval_id):
                Memory.objects.filter(seq=memory.seq).update(created_at=_instant(created[eval_id]))
    return owners, seqs


def evaluate(
    dataset: dict,
    *,
    strategies: Sequence[str] = ("keyword", "vector", "hybrid"),
    prefix: str = "eval:",
    keep: bool = False,
    served: bool = True,
    settings: MemorySettings | None = None,
    as_of: Literal["latest"] | datetime | None = None,
) -> list[dict]:
    """One report per strategy. ``served`` also runs each query as the gateway filters it (its score
    floor), which costs a second retrieval per query (not timed). ``settings`` (default: the stored
    ones) is what every retrieval runs with (eval_retrieval --rerank turns the local reranker on).
    ``as_of``: every question asked at that moment, or ``"latest"``, as of its owner's newest
    memory (see the module docstring); None asks them now."""
    owners, seqs = load_dataset(dataset, prefix=prefix)
    latest = latest_per_owner(dataset) if as_of == "latest" else {}
    try:
        index = reindex_all()
        seq_to_id = {seq: eval_id for eval_id, seq in seqs.items()}
        owner_of = {row["id"]: row["owner"] for row in dataset["memories"]}
        reports = []
        for name in strategies:
            strategy, use_vectors = STRATEGIES[name]
            # Each strategy pays for its own query embeddings: latencies stay comparable.
            shared_cache().clear()
            report = StrategyReport(name)
            for query in dataset["queries"]:
                owner = owners[query["owner"]]
                asked = latest.get(query["owner"]) if as_of == "latest" else as_of
                assert not isinstance(asked, str)  # "latest" was resolved to the owner's moment
                started = time.perf_counter()
                result = retrieve(
                    owner_ids=frozenset({owner.pk}),
                    query=query["query"],
                    strategy=strategy,
                    max_tokens=1_000_000,
                    limit=10,
                    filter_irrelevant=False,
                    use_vectors=use_vectors,
                    settings=settings,
                    as_of=asked,
                )
                report.latencies_ms.append((time.perf_counter() - started) * 1000)
                if "rerank" in result.timings_ms:
                    report.rerank_ms.append(result.timings_ms["rerank"])
                    report.reranked += bool(result.resolution.get("rerankApplied"))
                top = [seq_to_id.get(hit.memory.seq) for hit in result.hits[:10]]
                for hit in result.hits:
                    report.tiers[hit.tier] += 1
                report.isolation_failures += sum(
                    1 for t in top if t is None or owner_of.get(t) != query["owner"]
                )
                top1 = result.hits[0].score if result.hits else 0.0
                relevant = set(query["relevant"])
                answerable = query["kind"] != "negative" and bool(relevant)
                if served:
                    gated = retrieve(
                        owner_ids=frozenset({owner.pk}),
                        query=query["query"],
                        strategy=strategy,
                        limit=10,
                        use_vectors=use_vectors,
                        settings=settings,
                        as_of=asked,
                    )
                    report.served["answerable" if answerable else "unanswerable"].append(bool(gated.hits))
                if not answerable:
                    report.negative_top1.append(top1)
                    continue
                report.answerable_top1.append(top1)
                today = timezone.localdate(asked) if asked is not None else timezone.localdate()
                dated = question_period(query["query"], today=today) is not None
                for kind in (query["kind"], "overall", *([DATED] if dated else [])):
                    for k in KS:
                        report.recall[kind][k].append(len(relevant & set(top[:k])) / len(relevant))
                    report.hit5[kind].append(float(bool(relevant & set(top[:5]))))
            asked_as = as_of.isoformat() if isinstance(as_of, datetime) else as_of
            reports.append(report.summary() | {"index": index, "asOf": asked_as})
        return reports
    finally:
        if not keep:
            ApiKey.objects.filter(pk__in=[o.pk for o in owners.values()]).delete()


def format_table(report: dict) -> str:
    lines = [
        f"strategy: {report['strategy']}   latency p50 {report['latencyMs']['p50']} ms, "
        f"p95 {report['latencyMs']['p95']} ms   isolation failures: {report['isolationFailures']}"
        + (f"   as of: {report['asOf']}" if report.get("asOf") else "")
    ]
    lines.append(f"  {'kind':<12} {'n':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'Hit@5':>6}")
    order = sorted(report["recall"], key=lambda k: (k == "overall", k == DATED, k))
    for kind in order:
        row = report["recall"][kind]
        lines.append(
            f"  {kind:<12} {row['n']:>5} {row['R@1']:>6.3f} {row['R@5']:>6.3f} {row['R@10']:>6.3f} "
            f"{row['Hit@5']:>6.3f}"
        )
    served = report.get("served") or {}
    if served.get("unanswerableEmpty") is not None:
        lines.append(
            f"  gateway floor: answerable served {served['answerableServed']:.3f}, "
            f"unanswerable given nothing {served['unanswerableEmpty']:.3f}"
        )
    neg, ans = report["negativeTop1"], report["answerableTop1"]
    if neg:
        lines.append(
            f"  negative top-1 score: median {neg['median']}, max {neg['max']} "
            f"(answerable: median {ans.get('median')}, max {ans.get('max')})"
        )
    if report.get("rerankMs"):
        lines.append(
            f"  rerank: p50 {report['rerankMs']['p50']} ms, applied to {report['rerankMs']['applied']} queries"
        )
    lines.append(f"  tiers: {report['tiers']}")
    return "\n".join(lines)
