"""Run every benchmark against a throw-away data directory (the built models are reused).

Usage: python -m bench [name ...]   (names: ingest, embeddings, retrieval, backends, gateway, load, cognitive, consolidation)
       The figures are written to data/bench-results.json, or to the file BENCH_RESULTS names.
       python -m bench scale [--quick] [options]   (not in the default run: several minutes, its own
       processes and databases; see bench/scale.py)
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ["embeddings", "ingest", "retrieval", "backends", "gateway", "load", "cognitive", "consolidation"]


def setup_django(data_dir: str) -> None:
    os.environ.setdefault("MEMORY_MODELS_DIR", str(ROOT / "data" / "models"))
    os.environ["OMNIROUTE_DATA_DIR"] = data_dir
    # Tasks are queued to the (throw-away) Huey file and not run: each benchmark
    # times the indexing it needs explicitly.
    os.environ["HUEY_IMMEDIATE"] = "false"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def main(argv: list[str]) -> int:
    if argv[:1] == ["scale"]:  # runs alone: each part sets up its own database in a child process
        from bench.scale import main as scale_main

        return scale_main(argv[1:])
    names = argv or ORDER
    unknown = [n for n in names if n not in ORDER]
    if unknown:
        print(f"unknown benchmarks {unknown}; choose among {ORDER} (or: scale, alone)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="omniroute-bench-") as data_dir:
        setup_django(data_dir)
        results = {}
        for name in names:
            try:
                module = importlib.import_module(f"bench.{name}")
            except ImportError as exc:
                print(f"[{name}] skipped: {exc}")
                continue
            print(f"\n=== {name} ===", flush=True)
            started = time.perf_counter()
            results[name] = module.run()
            print(f"[{name}] {time.perf_counter() - started:.1f} s", flush=True)
        out = Path(os.environ.get("BENCH_RESULTS") or ROOT / "data" / "bench-results.json")
        out.write_text(json.dumps(results, indent=2, default=str))
        print(f"\nresults written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
