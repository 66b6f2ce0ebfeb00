"""``make bench`` keeps running: the retrieval benchmark on a small owner, in its own process and
throw-away data directory (it once failed on an import moved by a refactor, and no test ran it).
Its figures are not checked here: timing belongs to the benchmark, not to the tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory.embeddings import runtime

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.sqlite_only("runs an instance of its own on SQLite: once per CI run is enough")
@pytest.mark.skipif(
    not runtime.static_built(), reason="run `manage.py build_embedding_models` (make test does)"
)
def test_the_retrieval_benchmark_runs_and_checks_its_results_against_the_floors(tmp_path):
    env = {
        k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "OMNIROUTE_DATA_DIR"}
    }
    env["BENCH_SIZES"] = "2000"
    env["BENCH_RESULTS"] = str(tmp_path / "results.json")
    done = subprocess.run(
        [sys.executable, "-m", "bench", "retrieval"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2,000 memories/owner" in done.stdout and "hybrid p50" in done.stdout
    # the exactness checks the benchmark makes beside its timings
    assert "vector top-10 scores equal to numpy's for 100/100 queries" in done.stdout
    assert "FTS top-20 rows and scores equal to the full query's for 100/100 queries" in done.stdout
    figures = json.loads((tmp_path / "results.json").read_text())["retrieval"]["2000"]
    assert figures["vector_top10_same_as_numpy"] == 100 and figures["hybrid"]["p50"] > 0
