"""Gateway overhead, time to first streamed byte, and extraction time.

* Overhead: the same non-streaming chat request, sent sequentially (keep-alive httpx client) straight to a
  local upstream stub and through the gateway, interleaved in one run: memory ON (FTS tier, ~1000
  memories for the key, the default 2000-token budget) and memory OFF (``x-omniroute-no-memory``).
  Overhead = gateway percentile − direct percentile. Target: p50 ≤ 5 ms with memory ON. Then again with
  a local embedding source and hybrid retrieval, a new question each request: the static table (target
  ≤ 5 ms) and MiniLM (target ≤ 12 ms).
* First streamed byte: time until the first body byte of a streaming request, direct vs gateway, with
  an upstream that takes ≥ 200 ms to finish (so buffering or extraction on the path would show).
* Extraction: ``extract_facts`` on a 64 KiB text, and the whole ``extraction_run`` (facts stored).
* Gateway CPU per request (from ``/proc``), with a calibration loop and the load average: latencies on a
  shared machine move with its load, CPU time much less so.

The gateway runs as its own process (``uvicorn omniroute.asgi:application``, one worker) on the bench's
database, with Huey enqueueing to its SQLite queue (no consumer: the enqueue cost is on the path, the
work is not); the upstream stub and the client share this process.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.corpus import memories, sentence
from bench.stats import percentile, summary

ROOT = Path(__file__).resolve().parent.parent
N_MEMORIES = 1000
REQUESTS = 200
WARMUP = 30
TTFB_REQUESTS = 40
QUERY = "Which tools do I prefer for postgresql and docker in production?"
TARGET_OVERHEAD_P50_MS = 5.0
TARGET_PREVIEW_OVERHEAD_MS = 3.0
TARGET_OVERHEAD_TRANSFORMERS_P50_MS = 12.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _seed(upstream_url: str) -> tuple[str, dict]:
    """Create the key, its memories, the provider and the settings; return the key's secret and what the
    chat retrieval resolves to for the benchmark query."""
    from gateway.models import UpstreamProvider
    from memory.conf import update_memory_settings
    from memory.models import ApiKey
    from memory.retrieval.chat import retrieve_for_chat
    from memory.services.memories import MemoryInput, memory_bulk_create

    key, secret = ApiKey.issue(name="bench-gateway")
    other, _ = ApiKey.issue(name="bench-gateway-neighbour")
    memory_bulk_create([MemoryInput(owner=key, content=text) for text in memories(N_MEMORIES, seed=3)])
    memory_bulk_create([MemoryInput(owner=other, content=text) for text in memories(N_MEMORIES, seed=4)])
    UpstreamProvider.objects.update(is_default=False)
    UpstreamProvider.objects.update_or_create(
        name="bench-stub", defaults={"base_url": upstream_url, "is_default": True, "enabled": True}
    )
    # A fresh install's embedding settings (no remote key, local models off): hybrid degrades to FTS5.
    settings = update_memory_settings(
        {
            "enabled": True,
            "maxTokens": 2000,
            "strategy": "hybrid",
            "embeddingSource": "auto",
            "staticEnabled": False,
            "transformersEnabled": False,
        }
    )
    result = retrieve_for_chat(api_key=key, query=QUERY, settings=settings)
    tiers = sorted({hit.tier for hit in result.hits})
    timings = []
    for _ in range(50):
        started = time.perf_counter()
        retrieve_for_chat(api_key=key, query=QUERY, settings=settings)
        timings.append((time.perf_counter() - started) * 1000)
    return secret, {
        "key_id": str(key.pk),
        "injected": len(result.memories),
        "injected_tokens": result.total_tokens,
        "tiers": tiers,
        "resolution": result.resolution,
        "retrieve_for_chat_ms": summary(timings),
    }


def _preview(client: httpx.Client, base_url: str, key_id: str) -> dict:
    """REST ``retrieve-preview`` over HTTP against the engine time the server measures for the same call
    (``latencyMs``): what the HTTP, auth, DRF and serialisation layers add."""
    from memory.models import ManagementToken

    token = ManagementToken.issue(name="bench-preview", scope="admin")[1]
    url = f"{base_url}/api/memory/retrieve-preview"
    headers = {"Authorization": f"Bearer {token}"}
    body = {"query": QUERY, "apiKeyId": key_id}
    round_trips, engine = [], []
    for i in range(WARMUP + REQUESTS):
        started = time.perf_counter()
        response = client.post(url, json=body, headers=headers)
        elapsed = (time.perf_counter() - started) * 1000
        response.raise_for_status()
        if i >= WARMUP:
            round_trips.append(elapsed)
            engine.append(response.json()["latencyMs"])
    return {
        "round_trip": summary(round_trips),
        "engine": summary(engine),
        "overhead_p50_ms": round(percentile(round_trips, 50) - percentile(engine, 50), 3),
    }


def _with_source(
    client: httpx.Client, direct_url: str, gateway_url: str, secret: str, source: str
) -> dict | None:
    """The overhead again with a local embedding source (``static``, or ``transformers``: what ``auto`` picks
    once ``make`` built MiniLM), hybrid retrieval, a new question each time (no query embedding comes from
    the cache); ``None`` when that model is not built."""
    from memory.conf import update_memory_settings
    from memory.embeddings import runtime
    from memory.services.indexing import reindex_all

    if not (runtime.minilm_built() if source == "transformers" else runtime.static_built()):
        return None
    update_memory_settings(
        {
            "embeddingSource": source,
            "staticEnabled": source == "static",
            "transformersEnabled": source == "transformers",
        }
    )
    runtime.reset()
    reindex_all()
    time.sleep(2.5)  # the gateway process reads the settings again (MEMORY_SETTINGS_CACHE_SECONDS=2)
    return _overhead(client, direct_url, gateway_url, secret, new_question=True)


def _start_gateway(port: int) -> subprocess.Popen:
    env = {**os.environ, "HUEY_IMMEDIATE": "false", "MEMORY_SETTINGS_CACHE_SECONDS": "2"}
    process = subprocess.Popen(
        [
            sys.executable, "-m", "uvicorn", "omniroute.asgi:application", "--host", "127.0.0.1",
            "--port", str(port), "--log-level", "warning", "--no-access-log", "--lifespan", "off",
        ],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the gateway process exited")
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the gateway did not start")


def _overhead(
    client: httpx.Client, direct_url: str, gateway_url: str, secret: str, *, new_question: bool = False
) -> dict:
    """``new_question``: every request asks something new, so no query embedding comes from the cache."""
    body = {"model": "bench-model", "messages": [{"role": "user", "content": QUERY}]}
    auth = {"Authorization": f"Bearer {secret}"}
    variants = {
        "direct": (direct_url, {}),
        "memory_off": (gateway_url, {**auth, "x-omniroute-no-memory": "true"}),
        "memory_on": (gateway_url, auth),
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for index in range(WARMUP + REQUESTS):
        if new_question:
            body = {"model": "bench-model", "messages": [{"role": "user", "content": f"{QUERY} ({index})"}]}
        for name, (url, headers) in variants.items():
            started = time.perf_counter()
            response = client.post(url, json=body, headers=headers)
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise RuntimeError(f"{name}: HTTP {response.status_code} {response.text[:200]}")
            if index >= WARMUP:
                samples[name].append(elapsed)
    result = {name: summary(values) for name, values in samples.items()}
    for name in ("memory_off", "memory_on"):
        result[f"overhead_{name}"] = {
            p: round(percentile(samples[name], q) - percentile(samples["direct"], q), 3)
            for p, q in (("p50", 50), ("p95", 95))
        }
    return result


def _process_cpu_ms(pid: int) -> float | None:
    """User + system CPU time of a process (Linux ``/proc``; ``None`` elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") * 1000


def _gateway_cpu(client: httpx.Client, gateway_url: str, secret: str, pid: int) -> dict:
    """CPU milliseconds the gateway process spends per request: unlike latency, barely affected by other
    load on the machine."""
    body = {"model": "bench-model", "messages": [{"role": "user", "content": QUERY}]}
    auth = {"Authorization": f"Bearer {secret}"}
    result = {}
    not_found = gateway_url.replace("/chat/completions", "/no-such-route")
    for name, url, headers in (
        ("django_404", not_found, auth),  # the same ASGI stack doing nothing: Django's floor
        ("memory_off", gateway_url, {**auth, "x-omniroute-no-memory": "true"}),
        ("memory_on", gateway_url, auth),
    ):
        before = _process_cpu_ms(pid)
        for _ in range(REQUESTS):
            client.post(url, json=body, headers=headers)
        after = _process_cpu_ms(pid)
        result[name] = None if before is None or after is None else round((after - before) / REQUESTS, 3)
    return result


def _calibration_ms() -> float:
    """How fast this machine runs plain Python right now: best of 5 ``sum(range(10**6))`` (≈ 10 ms on an
    idle recent desktop CPU), to scale the latencies above."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        sum(range(10**6))
        best = min(best, (time.perf_counter() - started) * 1000)
    return round(best, 2)


def _ttfb(client: httpx.Client, direct_url: str, gateway_url: str, secret: str) -> dict:
    body = {"model": "bench-model", "messages": [{"role": "user", "content": QUERY}], "stream": True}
    samples: dict[str, dict[str, list[float]]] = {
        "direct": {"first_byte": [], "complete": []},
        "gateway": {"first_byte": [], "complete": []},
    }
    for _ in range(TTFB_REQUESTS):
        for name, url, headers in (
            ("direct", direct_url, {}),
            ("gateway", gateway_url, {"Authorization": f"Bearer {secret}"}),
        ):
            started = time.perf_counter()
            with client.stream("POST", url, json=body, headers=headers) as response:
                first = None
                for _chunk in response.iter_raw():
                    if first is None:
                        first = (time.perf_counter() - started) * 1000
            samples[name]["first_byte"].append(first)
            samples[name]["complete"].append((time.perf_counter() - started) * 1000)
    return {name: {k: summary(v) for k, v in parts.items()} for name, parts in samples.items()}


def _extraction() -> dict:
    import random

    from memory.extraction import extract_facts
    from memory.models import ApiKey
    from memory.services.extraction import extraction_run

    rng = random.Random(5)
    parts, size = [], 0
    facts = [
        "I prefer dark mode in my editor.",
        "I'll use Postgres for this project.",
        "I usually write tests first.",
    ]
    while size < 64 * 1024:
        piece = rng.choice(facts) if rng.random() < 0.05 else sentence(rng)
        parts.append(piece)
        size += len(piece) + 1
    text = " ".join(parts)[-64 * 1024 :]
    runs = []
    for _ in range(20):
        started = time.perf_counter()
        found = extract_facts(text, source="user_message")
        runs.append((time.perf_counter() - started) * 1000)
    from huey.contrib.djhuey import HUEY

    owner, _ = ApiKey.issue(name="bench-extraction")
    # As a consumer runs it: the tasks that the stored memories trigger (indexing) are enqueued, not run.
    immediate, HUEY.immediate = HUEY.immediate, False
    try:
        started = time.perf_counter()
        # The user's side: the assistant's is not learned by default (extractFromAssistant).
        stored = extraction_run(owner_id=str(owner.pk), session_id="bench", user_text=text, assistant_text="")
        run_ms = (time.perf_counter() - started) * 1000
    finally:
        HUEY.immediate = immediate
    return {
        "text_chars": len(text),
        "facts": len(found),
        "extract_facts_ms": summary(runs),
        "extraction_run_ms": round(run_ms, 3),
        "stored": len(stored),
    }


def run() -> dict:
    from tests.gateway.servers import ServerThread, UpstreamStub

    stub = UpstreamStub(reply="Sure. " + " ".join(["word"] * 10), chunk_delay=0.02)
    upstream = ServerThread(stub, name="bench-upstream").start()
    stub_requests = stub.requests
    secret, retrieval = _seed(f"{upstream.url}/v1")
    port = _free_port()
    gateway = _start_gateway(port)
    try:
        with httpx.Client(timeout=30) as client:
            stub.chunk_delay = 0.0
            direct_url = f"{upstream.url}/v1/chat/completions"
            gateway_url = f"http://127.0.0.1:{port}/v1/chat/completions"
            overhead = _overhead(client, direct_url, gateway_url, secret)
            cpu = _gateway_cpu(client, gateway_url, secret, gateway.pid)
            stub_requests.clear()
            stub.chunk_delay = 0.02
            ttfb = _ttfb(client, direct_url, gateway_url, secret)
            preview = _preview(client, f"http://127.0.0.1:{port}", retrieval["key_id"])
            static = _with_source(client, direct_url, gateway_url, secret, "static")
            transformers = _with_source(client, direct_url, gateway_url, secret, "transformers")
    finally:
        gateway.terminate()
        gateway.wait(timeout=10)
        upstream.stop()
    extraction = _extraction()
    calibration = _calibration_ms()

    on, off = overhead["overhead_memory_on"], overhead["overhead_memory_off"]
    print(
        f"retrieval for the bench query: {retrieval['injected']} memories / {retrieval['injected_tokens']} tokens "
        f"injected, tiers {retrieval['tiers']}, resolution {retrieval['resolution']}; retrieve_for_chat in "
        f"process p50 {retrieval['retrieve_for_chat_ms']['p50']} ms p95 {retrieval['retrieve_for_chat_ms']['p95']} ms"
    )
    print(
        f"non-stream, {REQUESTS} sequential requests each: direct p50 {overhead['direct']['p50']} ms "
        f"p95 {overhead['direct']['p95']} | gateway memory OFF p50 {overhead['memory_off']['p50']} "
        f"p95 {overhead['memory_off']['p95']} | memory ON p50 {overhead['memory_on']['p50']} "
        f"p95 {overhead['memory_on']['p95']}"
    )
    print(
        f"gateway overhead, memory ON (FTS): p50 {on['p50']} ms, p95 {on['p95']} ms "
        f"(target p50 ≤ {TARGET_OVERHEAD_P50_MS} ms: {'met' if on['p50'] <= TARGET_OVERHEAD_P50_MS else 'MISSED'}); "
        f"memory OFF: p50 {off['p50']} ms, p95 {off['p95']} ms"
    )
    print(
        f"gateway process CPU per request: memory OFF {cpu['memory_off']} ms, memory ON {cpu['memory_on']} ms, "
        f"a Django 404 on the same stack {cpu['django_404']} ms "
        f"(machine calibration: sum(range(10**6)) = {calibration} ms; ≈ 10 ms on an idle recent CPU; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    print(
        f"stream first byte: direct p50 {ttfb['direct']['first_byte']['p50']} ms, gateway p50 "
        f"{ttfb['gateway']['first_byte']['p50']} ms p95 {ttfb['gateway']['first_byte']['p95']} ms "
        f"(whole stream: direct p50 {ttfb['direct']['complete']['p50']} ms, gateway "
        f"{ttfb['gateway']['complete']['p50']} ms)"
    )
    if static is not None:
        st = static["overhead_memory_on"]
        print(
            f"gateway overhead, memory ON (static, hybrid, a new question each request): p50 {st['p50']} ms, "
            f"p95 {st['p95']} ms (target p50 ≤ {TARGET_OVERHEAD_P50_MS} ms: "
            f"{'met' if st['p50'] <= TARGET_OVERHEAD_P50_MS else 'MISSED'})"
        )
    if transformers is not None:
        tr = transformers["overhead_memory_on"]
        print(
            f"gateway overhead, memory ON (transformers, a new question each request): p50 {tr['p50']} ms, "
            f"p95 {tr['p95']} ms (target p50 ≤ {TARGET_OVERHEAD_TRANSFORMERS_P50_MS} ms: "
            f"{'met' if tr['p50'] <= TARGET_OVERHEAD_TRANSFORMERS_P50_MS else 'MISSED'})"
        )
    print(
        f"REST retrieve-preview over HTTP: round trip p50 {preview['round_trip']['p50']} ms, engine time on the "
        f"server p50 {preview['engine']['p50']} ms, overhead {preview['overhead_p50_ms']} ms "
        f"(target ≤ {TARGET_PREVIEW_OVERHEAD_MS} ms: "
        f"{'met' if preview['overhead_p50_ms'] <= TARGET_PREVIEW_OVERHEAD_MS else 'MISSED'})"
    )
    print(
        f"extraction of {extraction['text_chars']:,} chars: extract_facts p50 "
        f"{extraction['extract_facts_ms']['p50']} ms p95 {extraction['extract_facts_ms']['p95']} ms "
        f"({extraction['facts']} facts); extraction_run, storing {extraction['stored']} memories: "
        f"{extraction['extraction_run_ms']} ms (background task, not on the request path)"
    )
    return {
        "retrieval": retrieval,
        "overhead": overhead,
        "stream": ttfb,
        "retrieve_preview": preview,
        "overhead_static": static,
        "overhead_transformers": transformers,
        "extraction": extraction,
        "gateway_cpu_ms_per_request": cpu,
        "calibration_sum_range_ms": calibration,
        "load_average": os.getloadavg()[0],
        "target_overhead_p50_ms": TARGET_OVERHEAD_P50_MS,
    }


if __name__ == "__main__":
    import json
    import tempfile

    from bench.__main__ import setup_django

    with tempfile.TemporaryDirectory(prefix="omniroute-bench-") as data_dir:
        setup_django(data_dir)
        print(json.dumps(run(), indent=2, default=str))
