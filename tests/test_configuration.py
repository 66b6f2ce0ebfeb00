"""Every environment variable the settings read is documented in .env.example."""

import os
import re
import runpy
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_read_from_the_environment_is_in_env_example():
    settings_source = (ROOT / "omniroute" / "settings.py").read_text()
    read = set(re.findall(r'env(?:str|bool|int|float|choice|list)\(\s*"([A-Z0-9_]+)"', settings_source))
    documented = set(re.findall(r"^([A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    assert len(read) > 30
    assert read - documented == set()


def _settings_under(monkeypatch, tmp_path, **env) -> dict:
    """The module namespace omniroute/settings.py builds under ``env`` (a throw-away data directory)."""
    monkeypatch.setenv("OMNIROUTE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("OMNIROUTE_SECRET_KEY", "test")
    for name in [n for n in os.environ if n.startswith("QDRANT_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "omniroute" / "settings.py"))


def test_the_qdrant_environment_is_read_by_the_settings(monkeypatch, tmp_path):
    key_file = tmp_path / "qdrant-key"
    key_file.write_text("file-secret-key\n")
    read = _settings_under(
        monkeypatch,
        tmp_path,
        QDRANT_HOST=" qdrant.internal ",
        QDRANT_PORT="7333",
        QDRANT_API_KEY_FILE=str(key_file),
        QDRANT_COLLECTION="mem",
        QDRANT_TIMEOUT_SECONDS="9",
    )
    assert (read["QDRANT_HOST"], read["QDRANT_PORT"], read["QDRANT_API_KEY"]) == (
        "qdrant.internal",
        7333,
        "file-secret-key",
    )
    assert (read["QDRANT_COLLECTION"], read["QDRANT_TIMEOUT_SECONDS"]) == ("mem", 9)
    # Points use the memory embedding source: there is no Qdrant model to read.
    assert "QDRANT_EMBEDDING_MODEL" not in read


def test_qdrant_url_is_the_host_when_qdrant_host_is_empty(monkeypatch, tmp_path):
    read = _settings_under(monkeypatch, tmp_path, QDRANT_URL="https://cluster.example.com")
    assert read["QDRANT_HOST"] == "https://cluster.example.com"
    read = _settings_under(
        monkeypatch, tmp_path, QDRANT_URL="https://cluster.example.com", QDRANT_HOST="other:1234"
    )
    assert read["QDRANT_HOST"] == "other:1234"


@pytest.mark.parametrize(("name", "value"), [("QDRANT_PORT", "70000"), ("QDRANT_TIMEOUT_SECONDS", "0")])
def test_junk_in_the_qdrant_environment_fails_at_start(monkeypatch, tmp_path, name, value):
    with pytest.raises(ImproperlyConfigured, match=name):
        _settings_under(monkeypatch, tmp_path, **{name: value})


def test_only_the_settings_module_reads_the_environment():
    """Application code reads django.conf.settings; the environment is read in omniroute/settings.py."""
    allowed = {
        ROOT / "omniroute" / "settings.py",
        ROOT / "omniroute" / "env.py",
        # DJANGO_SETTINGS_MODULE, and the stdio MCP server's token (an alternative to --token).
        ROOT / "omniroute" / "asgi.py",
        ROOT / "omniroute" / "wsgi.py",
        ROOT / "memory" / "management" / "commands" / "mcp_server.py",
    }
    readers = {
        path
        for package in ("memory", "gateway", "dashboard", "omniroute")
        for path in (ROOT / package).rglob("*.py")
        if re.search(r"os\.environ|os\.getenv|omniroute\.env\b", path.read_text())
    }
    assert readers - allowed == set()
