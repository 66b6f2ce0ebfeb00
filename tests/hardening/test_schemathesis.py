"""schemathesis over ``/api/schema/``: generated requests (valid and invalid per the schema) to every
operation, through the WSGI application in this process (loopback only, nothing listens), must find
no server error and no schema mismatch: every answer conforms to the schema, every status is
documented, every request valid per the schema is accepted and every invalid one refused.

Left out: the settings writes, whose fields point the server at URLs (the Qdrant host, the remote
embedding and rerank endpoints): a generated value there would make later requests fetch it."""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from memory.models import ManagementToken

# The marker, not only the ``db`` fixture: schemathesis asks for fixtures while the test runs, and
# pytest-django creates the test database only for the tests it sees needing one when the session starts.
pytestmark = pytest.mark.django_db

EXAMPLES = 30
PARAMETERLESS = [
    "GET /api/memory/health",
    "GET /api/memory/engine-status",
    "GET /api/memory/embedding-providers",
    "GET /api/settings/memory",
    "GET /api/settings/qdrant",
    "GET /api/settings/qdrant/health",
]
EXCLUDED = {("PUT", "/api/settings/memory"), ("PATCH", "/api/settings/memory")}
EXCLUDED |= {("PUT", "/api/settings/qdrant"), ("PATCH", "/api/settings/qdrant")}


# Only generated requests, EXAMPLES per operation (positive and negative): the coverage phase would add
# an unbounded number of boundary cases, the stateful phase chains of calls.
CONFIG = SchemathesisConfig.from_dict(
    {
        "phases": {
            "examples": {"enabled": False},
            "coverage": {"enabled": False},
            "stateful": {"enabled": False},
        },
        "generation": {"max-examples": EXAMPLES, "deterministic": True, "database": "none"},
        # A route that takes nothing has one request to send: more examples only repeat it (the
        # health check runs its whole pipeline each time).
        "operations": [{"include-name": PARAMETERLESS, "generation": {"max-examples": 2}}],
    }
)

# Read at collection, through the WSGI application (the schema view touches no database).
schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(), config=CONFIG).exclude(
    func=lambda ctx: (ctx.operation.method.upper(), ctx.operation.path) in EXCLUDED
)


@pytest.fixture(autouse=True)
def _connection_kept_across_requests():
    """As Django's test client does: the WSGI handler would close the test's connection after each
    request (``close_old_connections``), inside the test's transaction."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True)
def _failures_not_throttled(settings):
    """schemathesis checks that bad credentials get their 401, dozens of times per operation from one
    address: past its threshold the failure throttle would answer 429 (tests/hardening/test_throttle.py)."""
    settings.OMNIROUTE_AUTH_FAILURES_PER_IP = 1_000_000
    settings.OMNIROUTE_AUTH_FAILURES_PER_CREDENTIAL = 1_000_000


@pytest.fixture
def admin_header(alice) -> dict[str, str]:
    """An admin token bound to one API key: writes without ``apiKeyId`` go to it (a global caller must
    name the key, a rule of the caller that the schema cannot state), any other key is a 404, and the
    routes that need a global caller answer their documented 403."""
    secret = ManagementToken.issue(name="schemathesis", scope="admin", owners=[alice])[1]
    return {"Authorization": f"Bearer {secret}"}


@schema.parametrize()
@settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_the_api_answers_as_its_schema_says(case, admin_header):
    case.call_and_validate(headers=admin_header)
