"""The Django admin's management-token form: only admin tokens may be bound to no API key."""

import pytest
from django.urls import reverse

from memory.models import ManagementToken

pytestmark = pytest.mark.django_db

REFUSAL = "A read token must be bound to at least one API key"


def test_the_admin_refuses_an_unbound_read_token_and_binds_the_owners_given(admin_client, alice):
    add = reverse("admin:memory_managementtoken_add")
    refused = admin_client.post(add, {"name": "ci", "scope": "read"})
    assert refused.status_code == 200 and REFUSAL in refused.content.decode()
    assert not ManagementToken.objects.exists()

    created = admin_client.post(add, {"name": "ci", "scope": "read", "owners": [str(alice.pk)]})
    assert created.status_code == 302
    assert list(ManagementToken.objects.get().owners.all()) == [alice]

    root, _ = ManagementToken.issue(name="root", scope="admin")
    change = reverse("admin:memory_managementtoken_change", args=[root.pk])
    narrowed = admin_client.post(change, {"name": "root", "scope": "read"})
    assert narrowed.status_code == 200 and REFUSAL in narrowed.content.decode()
    root.refresh_from_db()
    assert root.scope == "admin"
