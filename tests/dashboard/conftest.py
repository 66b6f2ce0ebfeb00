"""Studio fixtures: an admin (superuser), a staff operator, and htmx-aware clients."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client


class StudioClient(Client):
    """A logged-in client; ``hx_get``/``hx_post`` send what htmx sends."""

    def hx_get(self, path, data=None, *, target=None):
        headers = {"HX-Request": "true"}
        if target:
            headers["HX-Target"] = target
        return self.get(path, data or {}, headers=headers)

    def hx_post(self, path, data=None, *, target=None, **extra):
        headers = {"HX-Request": "true"}
        if target:
            headers["HX-Target"] = target
        return self.post(path, data or {}, headers=headers, **extra)


@pytest.fixture
def admin_user(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-123")


@pytest.fixture
def staff_user(db):
    return get_user_model().objects.create_user("operator", "op@example.com", "pw-op-123", is_staff=True)


@pytest.fixture
def studio(admin_user) -> StudioClient:
    client = StudioClient()
    client.force_login(admin_user)
    return client


@pytest.fixture
def operator(staff_user) -> StudioClient:
    client = StudioClient()
    client.force_login(staff_user)
    return client
