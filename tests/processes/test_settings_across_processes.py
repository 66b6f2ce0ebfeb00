"""A settings save in one process is seen by the others within about a second (the stamp row of
``memory.conf.Cached``), not after ``MEMORY_SETTINGS_CACHE_SECONDS``: two real processes on one SQLite
file, the reader with a cache TTL of an hour."""

from __future__ import annotations

import time

import httpx

from tests.processes.conftest import Instance

# Within this, a save elsewhere must show (the stamp is checked once a second; a loaded machine adds).
PROMPT_SECONDS = 5.0


def _wait_for(read, expected, *, within: float) -> float:
    started = time.monotonic()
    while True:
        value = read()
        if value == expected:
            return time.monotonic() - started
        assert time.monotonic() - started < within, f"still {value!r}, expected {expected!r}"
        time.sleep(0.1)


def test_a_save_in_another_process_is_seen_within_a_second_or_so(instance: Instance):
    token = instance.admin_token()
    served = instance.serve("--no-worker", env={"MEMORY_SETTINGS_CACHE_SECONDS": "3600"})
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=served.url, headers=headers, timeout=30) as client:

            def max_tokens() -> int:
                return client.get("/api/settings/memory").json()["maxTokens"]

            assert max_tokens() == 2000  # cached now, for an hour as far as the TTL goes
            saved = instance.python(
                "import json\nfrom memory.conf import update_memory_settings\n"
                "print(json.dumps(update_memory_settings({'maxTokens': 1234}).maxTokens))"
            )
            assert saved == 1234
            waited = _wait_for(max_tokens, 1234, within=PROMPT_SECONDS)

            # The Qdrant group has a stamp of its own, and the upstream providers theirs.
            qdrant = "/api/settings/qdrant"
            before = client.get(qdrant).json()["collection"]
            instance.python(
                "import json\nfrom memory.qdrant_conf import update_qdrant_settings\n"
                "print(json.dumps(update_qdrant_settings({'collection': 'moved'}).collection))"
            )
            _wait_for(lambda: client.get(qdrant).json()["collection"], "moved", within=PROMPT_SECONDS)
            assert before != "moved"
    finally:
        assert served.stop() == 0
    assert waited < PROMPT_SECONDS


def test_a_provider_saved_in_another_process_is_listed_at_once(instance: Instance):
    """The gateway's cached provider list follows a save made by another process (the admin, a
    command): ``/v1/models`` lists the new provider's models within about a second."""
    _, secret = instance.api_key("routing")
    served = instance.serve("--no-worker", env={"MEMORY_SETTINGS_CACHE_SECONDS": "3600"})
    try:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            headers = {"Authorization": f"Bearer {secret}"}

            def models() -> list[str]:
                response = client.get("/v1/models", headers=headers)
                assert response.status_code == 200, response.text
                return sorted(m["id"] for m in response.json()["data"])

            assert models() == []  # no provider yet: cached
            instance.python(
                "import json\nfrom gateway.models import UpstreamProvider\n"
                "p = UpstreamProvider.objects.create(name='late', base_url='http://127.0.0.1:9/v1',"
                " model_prefix='late/', model_ids='late/one', is_default=True)\nprint(json.dumps(p.pk))"
            )
            _wait_for(models, ["late/one"], within=PROMPT_SECONDS)
    finally:
        assert served.stop() == 0
