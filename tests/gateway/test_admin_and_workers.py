"""The provider admin (the upstream key never shown) and the gateway's database threads."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import DatabaseError, connection, connections

from gateway.models import UpstreamProvider
from gateway.workers import after_response, run_db, wait_for_after_response_work
from omniroute.serverloop import server_loop


@pytest.mark.django_db
def test_the_admin_list_masks_the_upstream_key(admin_client):
    UpstreamProvider.objects.create(
        name="openai", base_url="https://api.openai.test/v1", api_key="sk-live-abcdef123456"
    )

    page = admin_client.get("/admin/gateway/upstreamprovider/").content.decode()

    assert "openai" in page
    assert "sk-live-abcdef123456" not in page
    assert "sk-…3456" in page


@pytest.mark.django_db
def test_the_admin_form_never_shows_the_key_and_keeps_it_when_left_blank(admin_client):
    provider = UpstreamProvider.objects.create(
        name="openai", base_url="https://api.openai.test/v1", api_key="sk-live-abcdef123456"
    )
    url = f"/admin/gateway/upstreamprovider/{provider.pk}/change/"
    assert "sk-live-abcdef123456" not in admin_client.get(url).content.decode()

    form = {
        "name": "openai", "base_url": "https://api.openai.test/v2", "api_key": "", "model_prefix": "",
        "model_ids": "", "system_role": "auto", "timeout_seconds": "30", "enabled": "on",
    }  # fmt: skip
    response = admin_client.post(url, form)

    assert response.status_code == 302
    provider.refresh_from_db()
    assert (provider.base_url, provider.api_key) == ("https://api.openai.test/v2", "sk-live-abcdef123456")


@pytest.mark.django_db(transaction=True)
def test_a_database_thread_closes_a_connection_that_failed(monkeypatch):
    # (SQLite ignores close() on the in-memory test database, so the call itself is what is checked.)
    closed = []
    monkeypatch.setattr(type(connections["default"]), "close", lambda self: closed.append(self))

    def query(sql):
        try:
            with connection.cursor() as cursor:
                cursor.execute(sql)
        except DatabaseError:
            pass
        return connections["default"]  # this thread's wrapper, not the proxy

    asyncio.run(run_db(query, "SELECT 1"))
    assert closed == []
    failed = asyncio.run(run_db(query, "SELECT * FROM no_such_table"))
    assert closed == [failed]


def test_after_response_work_runs_in_order_and_never_raises():
    seen = []
    after_response(lambda: seen.append(1))
    after_response(lambda: 1 / 0)
    after_response(lambda: seen.append(2))
    assert wait_for_after_response_work()
    assert seen == [1, 2]


def test_after_response_work_hands_coroutines_to_the_loop_of_the_request_that_handed_it():
    """What the work relays to the Studio goes through the server's loop (no new loop per send)."""

    async def scenario():
        seen = []
        # A request's synchronous code (on its thread, as Django runs a response's close()) hands it over.
        await sync_to_async(lambda: after_response(lambda: seen.append(server_loop())))()
        assert await sync_to_async(wait_for_after_response_work, thread_sensitive=False)()
        return asyncio.get_running_loop(), seen

    loop, seen = async_to_sync(scenario)()
    assert seen == [loop]
    # Handed over by a thread that serves no loop (a command, a Huey worker): none, so sends wait.
    after_response(lambda: seen.append(server_loop()))
    assert wait_for_after_response_work()
    assert seen == [loop, None]
