"""Load and locking: writers, readers and chat clients beside large bulk imports, on the real server.

The server is ``manage.py serve`` (uvicorn with the Huey workers in its process) on a throw-away data
directory, reached over loopback only; the chat upstream is a local stub (``tests.gateway.servers``).
For ``--duration`` seconds it runs, at once:

* ``--writers`` clients creating one memory at a time (``POST /api/memory``);
* ``--readers`` clients listing and searching (``GET /api/memory``, with and without ``q``) and
  previewing retrieval (``POST /api/memory/retrieve-preview``);
* ``--chats`` clients of the gateway (``POST /v1/chat/completions``), whose answers queue extraction;
* one client importing ``--bulk-size`` memories per request (``POST /api/memory/bulk``), back to back.

Then it waits (at most ``--drain`` seconds) for the background indexing to finish and reports: answers
by status for each kind of client, write latency (p50/p95), acknowledged writes that are not in the
database, the memory / FTS / vector row counts, the server log's "database is locked" lines, and the
machine's load average (latencies move with it on a shared machine).

Usage: ``python -m bench.load [--writers 8] [--readers 8] [--chats 2] [--duration 20] [--bulk-size 10000]
[--drain 180] [--log FILE] [--consumer serve|process] [--redis-url URL]``
(the issue's load: ``--duration 60``), or ``python -m bench load`` with the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.corpus import sentence
from bench.stats import summary

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Options:
    writers: int = 8
    readers: int = 8
    chats: int = 2
    duration: float = 20.0
    bulk_size: int = 10_000
    drain: float = 180.0
    log: str | None = None  # where to copy the server's log
    # "serve": the task threads inside the web process (the default layout); "process": ``serve
    # --no-worker`` and one ``run_huey`` at nice 10 beside it, the queue on Redis (docs/deployment.md).
    consumer: str = "serve"
    redis_url: str = "redis://127.0.0.1:6379/13"


@dataclass
class Tally:
    """What the clients saw: answers by kind and status, write latencies, acknowledged ids."""

    statuses: dict[str, Counter] = field(default_factory=dict)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    acked: list[str] = field(default_factory=list)
    retry_after: Counter = field(default_factory=Counter)

    def record(self, kind: str, status: str, ms: float) -> None:
        self.statuses.setdefault(kind, Counter())[status] += 1
        self.latencies.setdefault(kind, []).append(ms)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _seed(upstream_url: str) -> dict[str, str]:
    """The API keys (one for single writes, one for bulks), an admin token and the stub provider."""
    from gateway.models import UpstreamProvider
    from memory.models import ApiKey, ManagementToken

    key, secret = ApiKey.issue(name="load-writes")
    bulk_key, _ = ApiKey.issue(name="load-bulks")
    token = ManagementToken.issue(name="load-admin", scope="admin")[1]
    UpstreamProvider.objects.update(is_default=False)
    UpstreamProvider.objects.update_or_create(
        name="load-stub", defaults={"base_url": upstream_url, "is_default": True, "enabled": True}
    )
    return {"key": str(key.pk), "secret": secret, "bulk_key": str(bulk_key.pk), "token": token}


def _env() -> dict[str, str]:
    return {**os.environ, "HUEY_IMMEDIATE": "false", "OMNIROUTE_LOG_LEVEL": "WARNING"}


def _start_consumer(log_path: Path) -> subprocess.Popen:
    """A ``run_huey`` consumer (two threads, the periodic tasks too) at nice 10, as docs/deployment.md
    lays out consumers beside web processes."""
    return subprocess.Popen(
        ["nice", "-n", "10", sys.executable, "manage.py", "run_huey", "-w", "2"],
        cwd=ROOT,
        env=_env(),
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
    )


def _start_server(port: int, log_path: Path, *, no_worker: bool = False) -> subprocess.Popen:
    env = _env()
    log = log_path.open("w")
    extra = ["--no-worker"] if no_worker else []
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port), *extra],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError("the server did not start")


async def _call(
    tally: Tally, kind: str, client: httpx.AsyncClient, method: str, url: str, **kwargs: object
) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        response = await client.request(method, url, **kwargs)  # type: ignore[arg-type]
    except httpx.HTTPError as exc:
        tally.record(kind, f"transport:{type(exc).__name__}", (time.perf_counter() - started) * 1000)
        return None
    tally.record(kind, str(response.status_code), (time.perf_counter() - started) * 1000)
    if "retry-after" in response.headers:
        tally.retry_after[kind] += 1
    return response


async def _writer(n: int, base: str, seed: dict[str, str], tally: Tally, stop: float) -> None:
    rng = random.Random(n)
    headers = {"Authorization": f"Bearer {seed['token']}"}
    async with httpx.AsyncClient(timeout=60, headers=headers) as client:
        while time.monotonic() < stop:
            body = {"apiKeyId": seed["key"], "content": sentence(rng), "type": "factual"}
            response = await _call(tally, "write", client, "POST", f"{base}/api/memory", json=body)
            if response is not None and response.status_code in (200, 201):
                tally.acked.append(response.json()["memory"]["id"])


async def _reader(n: int, base: str, seed: dict[str, str], tally: Tally, stop: float) -> None:
    rng = random.Random(1000 + n)
    headers = {"Authorization": f"Bearer {seed['token']}"}
    async with httpx.AsyncClient(timeout=60, headers=headers) as client:
        while time.monotonic() < stop:
            roll = rng.random()
            if roll < 0.34:
                params = {"apiKeyId": seed["key"], "limit": "20"}
                await _call(tally, "read", client, "GET", f"{base}/api/memory", params=params)
            elif roll < 0.67:
                params = {"apiKeyId": seed["key"], "q": sentence(rng).split()[0], "limit": "20"}
                await _call(tally, "read", client, "GET", f"{base}/api/memory", params=params)
            else:
                body = {"apiKeyId": seed["key"], "query": sentence(rng)}
                await _call(tally, "read", client, "POST", f"{base}/api/memory/retrieve-preview", json=body)


async def _chat(n: int, base: str, seed: dict[str, str], tally: Tally, stop: float) -> None:
    rng = random.Random(2000 + n)
    headers = {"Authorization": f"Bearer {seed['secret']}"}
    async with httpx.AsyncClient(timeout=60, headers=headers) as client:
        while time.monotonic() < stop:
            text = f"I prefer {rng.choice(['tea', 'coffee', 'vim', 'emacs', 'rust', 'go'])}. {sentence(rng)}"
            body = {"model": "stub-large", "messages": [{"role": "user", "content": text}]}
            await _call(tally, "chat", client, "POST", f"{base}/v1/chat/completions", json=body)


async def _bulk(base: str, seed: dict[str, str], tally: Tally, stop: float, size: int) -> None:
    rng = random.Random(3000)
    headers = {"Authorization": f"Bearer {seed['token']}"}
    async with httpx.AsyncClient(timeout=300, headers=headers) as client:
        while time.monotonic() < stop:
            items = [{"apiKeyId": seed["bulk_key"], "content": sentence(rng)} for _ in range(size)]
            response = await _call(
                tally, "bulk", client, "POST", f"{base}/api/memory/bulk", json={"memories": items}
            )
            if response is not None and response.status_code == 200:
                tally.acked.extend(response.json()["ids"])


async def _load(base: str, seed: dict[str, str], options: Options) -> Tally:
    tally = Tally()
    stop = time.monotonic() + options.duration
    await asyncio.gather(
        *(_writer(i, base, seed, tally, stop) for i in range(options.writers)),
        *(_reader(i, base, seed, tally, stop) for i in range(options.readers)),
        *(_chat(i, base, seed, tally, stop) for i in range(options.chats)),
        _bulk(base, seed, tally, stop, options.bulk_size),
    )
    return tally


def _counts() -> dict[str, int | None]:
    """Rows of ``memories``, documents in the FTS index, vectors in sqlite-vec (read from the shadow
    tables, so no extension is needed), and memories still waiting for a vector."""
    from django.db import connection

    def scalar(sql: str) -> int | None:
        with connection.cursor() as cursor:
            try:
                cursor.execute(sql)
            except Exception:  # the vector table is created on the first vector; absent until then
                return None
            return int(cursor.fetchone()[0])

    return {
        "memories": scalar("SELECT count(*) FROM memories"),
        "fts": scalar("SELECT count(*) FROM memory_fts_docsize"),
        "vectors": scalar("SELECT count(*) FROM memory_vec_rowids"),
        "pending": scalar("SELECT count(*) FROM memories WHERE needs_reindex"),
    }


def _lost(acked: list[str]) -> int:
    """Acknowledged ids with no row."""
    from memory.models import Memory

    found = 0
    for start in range(0, len(acked), 500):
        found += Memory.objects.filter(uuid__in=acked[start : start + 500]).count()
    return len(acked) - found


def _drain(limit: float) -> float:
    """Wait (at most ``limit`` s) until no memory waits for its vector; returns the seconds waited."""
    from django.db import connection

    started = time.monotonic()
    while time.monotonic() - started < limit:
        connection.close()  # a fresh snapshot
        if not _counts()["pending"]:
            break
        time.sleep(1)
    return round(time.monotonic() - started, 1)


def run(options: Options | None = None) -> dict:
    from tests.gateway.servers import ServerThread, UpstreamStub

    options = options or Options()
    stub = UpstreamStub(reply="Noted. " + " ".join(["word"] * 10))
    upstream = ServerThread(stub, name="load-upstream").start()
    seed = _seed(f"{upstream.url}/v1")
    port = _free_port()
    log_path = Path(os.environ["OMNIROUTE_DATA_DIR"]) / "server.log"
    load_before = os.getloadavg()
    separate = options.consumer == "process"
    server = _start_server(port, log_path, no_worker=separate)
    consumer_log = log_path.with_name("consumer.log")
    consumer = _start_consumer(consumer_log) if separate else None
    try:
        started = time.monotonic()
        tally = asyncio.run(_load(f"http://127.0.0.1:{port}", seed, options))
        elapsed = time.monotonic() - started
        load_during = os.getloadavg()
        drained = _drain(options.drain)
    finally:
        for process in (server, consumer):
            if process is None:
                continue
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        upstream.stop()
    log = log_path.read_text(errors="replace")
    if consumer is not None:
        log += consumer_log.read_text(errors="replace")
    if options.log:
        Path(options.log).write_text(log)
    counts = _counts()
    writes = tally.latencies.get("write", [])
    result = {
        "options": options.__dict__,
        "elapsed_s": round(elapsed, 1),
        "statuses": {kind: dict(sorted(c.items())) for kind, c in tally.statuses.items()},
        "errors": {
            kind: sum(n for status, n in c.items() if not status.startswith("2"))
            for kind, c in tally.statuses.items()
        },
        "retry_after_answers": dict(tally.retry_after),
        "write_ms": summary(writes),
        "bulk_ms": summary(tally.latencies.get("bulk", [])),
        "read_ms": summary(tally.latencies.get("read", [])),
        "chat_ms": summary(tally.latencies.get("chat", [])),
        "acknowledged": len(tally.acked),
        "lost_acknowledged": _lost(tally.acked),
        "counts": counts,
        "counts_equal": counts["memories"] == counts["fts"] == counts["vectors"],
        "drain_s": drained,
        "log_database_is_locked": log.count("database is locked"),
        "log_tracebacks": log.count("Traceback"),
        "cpus": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after_load": [round(x, 2) for x in load_during],
    }
    _print(result)
    return result


def _print(result: dict) -> None:
    print(f"statuses      {json.dumps(result['statuses'])}")
    print(f"errors        {json.dumps(result['errors'])}  (Retry-After on {result['retry_after_answers']})")
    print(
        f"write ms      p50 {result['write_ms']['p50']}  p95 {result['write_ms']['p95']}  n {result['write_ms']['n']}"
    )
    print(f"bulk ms       {result['bulk_ms']}")
    print(f"lost acks     {result['lost_acknowledged']} of {result['acknowledged']}")
    print(
        f"counts        {result['counts']}  equal: {result['counts_equal']}  (drained in {result['drain_s']} s)"
    )
    print(
        f"server log    'database is locked' x{result['log_database_is_locked']}, tracebacks x{result['log_tracebacks']}"
    )
    print(
        f"machine       {result['cpus']} CPUs, load {result['loadavg_before']} -> {result['loadavg_after_load']}"
    )


def parse(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n\n")[0])
    defaults = Options()
    parser.add_argument("--writers", type=int, default=defaults.writers)
    parser.add_argument("--readers", type=int, default=defaults.readers)
    parser.add_argument("--chats", type=int, default=defaults.chats)
    parser.add_argument("--duration", type=float, default=defaults.duration, help="seconds of load")
    parser.add_argument("--bulk-size", type=int, default=defaults.bulk_size, help="memories per bulk request")
    parser.add_argument("--drain", type=float, default=defaults.drain, help="seconds to wait for indexing")
    parser.add_argument("--log", default=None, help="copy the server's log to this file")
    parser.add_argument(
        "--consumer",
        choices=("serve", "process"),
        default=defaults.consumer,
        help="where the background tasks run: serve's threads, or a run_huey process (queue on Redis)",
    )
    parser.add_argument("--redis-url", default=defaults.redis_url, help="the queue of --consumer process")
    args = parser.parse_args(argv)
    for name in ("writers", "readers", "chats", "bulk_size"):
        if getattr(args, name) < 0 or (name == "bulk_size" and args.bulk_size < 1):
            parser.error(f"--{name.replace('_', '-')} out of range")
    if not 1 <= args.duration <= 600:
        parser.error("--duration must be within 1..600 seconds")
    return Options(
        args.writers,
        args.readers,
        args.chats,
        args.duration,
        args.bulk_size,
        args.drain,
        args.log,
        args.consumer,
        args.redis_url,
    )


def main(argv: list[str]) -> int:
    from bench.__main__ import setup_django

    options = parse(argv)
    if options.consumer == "process":
        import redis

        os.environ["REDIS_URL"] = options.redis_url  # the server, the consumer and the drain's reads
        redis.Redis.from_url(options.redis_url).flushdb()
    with tempfile.TemporaryDirectory(prefix="omniroute-load-") as data_dir:
        setup_django(data_dir)
        result = run(options)
    return 1 if any(result["errors"].values()) or result["lost_acknowledged"] else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
