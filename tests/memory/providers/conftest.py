"""Every store these tests use listens on loopback (the Redis on 127.0.0.1:6379, a `chroma run`, the
test services), which the outbound URL policy refuses unless the private-network switch is on: it is
on here. The policy itself is tested with the switch off in tests/memory/backends/test_url_policy.py
and, through the REST API, in test_providers_api.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings


@pytest.fixture(autouse=True)
def _loopback_allowed() -> Iterator[None]:
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield
