"""A file-based instance for tests that spawn ``manage.py`` processes.

The test database is in memory and cannot be shared with a subprocess, so
these tests migrate a fresh SQLite file (once per session) and talk to it
only through subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]


@dataclass
class Instance:
    data_dir: Path
    env: dict

    @property
    def db_path(self) -> Path:
        return self.data_dir / "omniroute.sqlite3"

    def manage(self, *args: str, check: bool = True, env: dict | None = None, timeout: int = 120):
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def popen(self, *args: str, env: dict | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env={**self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def python(self, code: str):
        """Run ``code`` in a Django shell of this instance; it prints one JSON value, returned here."""
        out = self.manage("shell", "--no-imports", "-c", code).stdout.strip().splitlines()
        return json.loads(out[-1])

    def api_key(self, name: str) -> str:
        return self.manage("create_api_key", "--name", name).stdout.splitlines()[0].removeprefix("id=")

    def token(self, scope: str, *owners: str) -> str:
        args = ["create_management_token", "--name", f"{scope}-token", "--scope", scope]
        for owner in owners:
            args += ["--owner", owner]
        return self.manage(*args).stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def instance(tmp_path_factory) -> Instance:
    data_dir = tmp_path_factory.mktemp("instance")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "omniroute.settings",
        "OMNIROUTE_DATA_DIR": str(data_dir),
        "OMNIROUTE_DB_PATH": str(data_dir / "omniroute.sqlite3"),
        "MEMORY_MODELS_DIR": str(data_dir / "models"),
        "OMNIROUTE_LOG_LEVEL": "WARNING",
    }
    for name in ("OMNIROUTE_TEST_DB_PATH", "REDIS_URL", "OMNIROUTE_TOKEN"):
        env.pop(name, None)
    result = Instance(data_dir=data_dir, env=env)
    result.manage("migrate", "--noinput")
    return result
