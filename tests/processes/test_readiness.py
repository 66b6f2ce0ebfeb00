"""GET /readyz: each check, the pid, and the 503 envelope with Retry-After when a check fails."""

from __future__ import annotations

import json
import os

import pytest

from memory.conf import update_memory_settings
from tests.processes.conftest import Instance, free_port

pytestmark = pytest.mark.django_db


def test_ready_names_each_check_and_this_process(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ready",
        "pid": os.getpid(),
        "checks": {"database": "ok", "queue": "ok", "embeddings": "ok"},
    }
    assert "Retry-After" not in response.headers


def test_an_explicit_local_model_that_is_not_built_is_not_ready(client, settings, tmp_path):
    settings.MEMORY_MODELS_DIR = tmp_path / "no-models"
    update_memory_settings({"embeddingSource": "static"})
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    error = response.json()["error"]
    assert error["message"] == "Not ready: embeddings: embedding model not built"
    assert error["details"] == [{"field": "embeddings", "message": "embedding model not built"}]
    # auto without any model is a keyword-only instance, ready by design
    update_memory_settings({"embeddingSource": "auto"})
    assert client.get("/readyz").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_database_that_cannot_be_opened_is_not_ready(client, tmp_path):
    from tests.faults import database_unreachable

    with database_unreachable(tmp_path / "missing"):
        response = client.get("/readyz")
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    assert response.json()["error"]["details"] == [{"field": "database", "message": "database unreachable"}]
    assert client.get("/readyz").status_code == 200


def test_readyz_answers_get_only(client):
    assert client.post("/readyz").status_code == 405


READYZ = """
import json
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
response = Client().get("/readyz")
print(json.dumps([response.status_code, response.headers.get("Retry-After"), response.json()]))
"""


@pytest.mark.django_db(transaction=False)
def test_a_redis_queue_that_does_not_answer_is_not_ready(instance: Instance):
    """REDIS_URL pointing at a port where nothing listens: the queue check fails, nothing else, and
    the answer names no address."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    result = instance.manage("shell", "--no-imports", "-c", READYZ, env={"REDIS_URL": url})
    assert result.returncode == 0, result.stderr[-3000:]
    status, retry_after, body = json.loads(result.stdout.strip().splitlines()[-1])
    assert (status, retry_after) == (503, "5")
    assert body["error"]["details"] == [{"field": "queue", "message": "queue unreachable"}]
    assert "127.0.0.1" not in json.dumps(body)
