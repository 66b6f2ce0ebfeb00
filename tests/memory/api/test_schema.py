"""The OpenAPI schema and the offline docs page."""

import pytest

pytestmark = pytest.mark.django_db


def test_the_openapi_schema_lists_the_memory_routes(client):
    r = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    import json

    schema = json.loads(r.content)
    assert schema["openapi"].startswith("3.")
    assert "/api/memory" in schema["paths"] and "/api/memory/bulk" in schema["paths"]


def test_the_docs_page_uses_only_local_assets(client):
    r = client.get("/api/docs/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "swagger-ui" in html
    assert "cdn." not in html and "unpkg" not in html and "jsdelivr" not in html
