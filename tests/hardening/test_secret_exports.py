"""``manage.py dumpdata`` writes the provider keys as their stored ciphertext, never in clear, and
``manage.py loaddata`` of that dump gives back a readable key (the real commands, run through
``call_command``)."""

from __future__ import annotations

import base64
import io
import json

import pytest
from django.core import serializers
from django.core.management import call_command
from django.test import override_settings

from gateway.models import UpstreamProvider
from memory.crypto import SecretUnreadable

PROVIDER_KEY = "sk-dumped-7c41e2b9a0d3"
KEY_A = base64.b64encode(b"A" * 32).decode()
KEY_B = base64.b64encode(b"B" * 32).decode()

pytestmark = pytest.mark.django_db


def dump(*labels: str) -> list[dict]:
    out = io.StringIO()
    call_command("dumpdata", *labels, format="json", stdout=out)
    return json.loads(out.getvalue())


def stored_key(pk: int) -> str:
    return UpstreamProvider.objects.filter(pk=pk).values_list("api_key", flat=True).get()


def test_dumpdata_writes_the_ciphertext_and_loaddata_restores_a_readable_key(tmp_path):
    provider = UpstreamProvider.objects.create(
        name="openai", base_url="https://api.openai.test/v1", api_key=PROVIDER_KEY
    )

    rows = dump("gateway.UpstreamProvider")
    assert PROVIDER_KEY not in json.dumps(rows)
    (row,) = rows
    assert row["fields"]["api_key"] == stored_key(provider.pk)
    assert row["fields"]["api_key"].startswith("enc:v1:")

    fixture = tmp_path / "providers.json"
    fixture.write_text(json.dumps(rows))
    UpstreamProvider.objects.all().delete()
    call_command("loaddata", str(fixture), stdout=io.StringIO())

    restored = UpstreamProvider.objects.get(pk=provider.pk)
    assert restored.api_key == PROVIDER_KEY
    assert stored_key(provider.pk).startswith("enc:v1:")


def test_an_instance_holding_the_clear_key_serialises_a_fresh_ciphertext_for_its_row():
    provider = UpstreamProvider.objects.create(name="a", base_url="https://a.test/v1", api_key=PROVIDER_KEY)
    assert provider.api_key == PROVIDER_KEY  # the instance now holds the clear value

    (row,) = json.loads(serializers.serialize("json", [provider]))

    sealed = row["fields"]["api_key"]
    assert PROVIDER_KEY not in sealed and sealed.startswith("enc:v1:")
    copy = UpstreamProvider(pk=provider.pk)
    copy.api_key = sealed
    assert copy.api_key == PROVIDER_KEY  # it opens for this row


def test_a_fixture_with_a_clear_key_is_stored_encrypted(tmp_path):
    fixture = tmp_path / "clear.json"
    fixture.write_text(
        json.dumps(
            [
                {
                    "model": "gateway.upstreamprovider",
                    "pk": 41,
                    "fields": {
                        "name": "hand-written",
                        "base_url": "https://h.test/v1",
                        "api_key": PROVIDER_KEY,
                        "timeout_seconds": 5.0,
                        "created_at": "2026-01-01T00:00:00Z",
                        "updated_at": "2026-01-01T00:00:00Z",
                    },
                }
            ]
        )
    )

    call_command("loaddata", str(fixture), stdout=io.StringIO())

    assert PROVIDER_KEY not in stored_key(41) and stored_key(41).startswith("enc:v1:")
    assert UpstreamProvider.objects.get(pk=41).api_key == PROVIDER_KEY


def test_a_key_the_current_master_key_cannot_open_is_dumped_and_loaded_unchanged(tmp_path):
    with override_settings(MEMORY_ENCRYPTION_KEY=base64.b64decode(KEY_A)):
        provider = UpstreamProvider.objects.create(
            name="old", base_url="https://old.test/v1", api_key=PROVIDER_KEY
        )
    ciphertext = stored_key(provider.pk)

    with override_settings(MEMORY_ENCRYPTION_KEY=base64.b64decode(KEY_B)):
        rows = dump("gateway.UpstreamProvider")
        assert rows[0]["fields"]["api_key"] == ciphertext
        fixture = tmp_path / "old.json"
        fixture.write_text(json.dumps(rows))
        UpstreamProvider.objects.all().delete()
        call_command("loaddata", str(fixture), stdout=io.StringIO())
        assert stored_key(provider.pk) == ciphertext
        with pytest.raises(SecretUnreadable):
            UpstreamProvider.objects.get(pk=provider.pk).api_key  # noqa: B018

    with override_settings(MEMORY_ENCRYPTION_KEY=base64.b64decode(KEY_A)):
        assert UpstreamProvider.objects.get(pk=provider.pk).api_key == PROVIDER_KEY
