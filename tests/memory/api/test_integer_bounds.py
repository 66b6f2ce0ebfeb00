"""Every integer the REST API reads is bounded: out-of-range or malformed values are a 400 naming the field.

SQLite integers are 64-bit, so an unbounded ``offset`` or ``page`` used to reach the driver and fail
there with a 500.
"""

import pytest

from memory.bounds import MAX_POSITION

pytestmark = pytest.mark.django_db

# What a fuzzer sends: past SQLite's 64-bit range, negative, beyond a double, not a number, far too large.
QUERY_VALUES = [str(2**63), "-1", "1e309", "abc", str(10**30)]
BODY_VALUES = ["9223372036854775808", "-1", "1e309", '"abc"', str(10**30)]

QUERY_ROUTES = {"/api/memory": ["page", "limit", "offset"]}
# (method, path, a valid body the integer field is added to, integer fields)
BODY_ROUTES = [
    ("post", "/api/memory/retrieve-preview", '"query": "tea"', ["maxTokens", "limit"]),
    ("post", "/api/memory/summarize", '"dryRun": true', ["olderThanDays"]),
    ("put", "/api/settings/memory", None, ["maxTokens", "retentionDays"]),
    ("put", "/api/settings/qdrant", None, ["port", "timeoutSeconds"]),
    ("post", "/api/settings/qdrant/search", '"query": "tea"', ["topK"]),
    ("post", "/api/settings/qdrant/cleanup", None, ["retentionDays"]),
]


def _problem(response, field: str) -> str | None:
    """Why ``response`` is not a 400 envelope naming ``field`` (``None`` when it is)."""
    if response.status_code != 400:
        return f"status {response.status_code}"
    details = response.json()["error"]["details"]
    if [d["field"] for d in details] != [field]:
        return f"details {details}"
    return None


def test_every_integer_input_is_bounded_and_named(admin_api, alice):
    failures = []
    for path, fields in QUERY_ROUTES.items():
        for field in fields:
            for value in QUERY_VALUES:
                problem = _problem(admin_api.get(path, {"apiKeyId": str(alice.pk), field: value}), field)
                if problem:
                    failures.append(f"GET {path}?{field}={value}: {problem}")
    for method, path, base, fields in BODY_ROUTES:
        for field in fields:
            for value in BODY_VALUES:
                raw = "{" + (f"{base}, " if base else "") + f'"{field}": {value}' + "}"
                problem = _problem(getattr(admin_api, method)(path, raw=raw), field)
                if problem:
                    failures.append(f"{method.upper()} {path} {raw}: {problem}")
    assert failures == []


def test_the_documented_maximum_is_accepted_and_one_more_is_not(admin_api, alice):
    for field in ("page", "offset"):
        at_max = admin_api.get("/api/memory", {"apiKeyId": str(alice.pk), field: MAX_POSITION})
        assert at_max.status_code == 200 and at_max.json()["data"] == []
        beyond = admin_api.get("/api/memory", {"apiKeyId": str(alice.pk), field: MAX_POSITION + 1})
        assert beyond.status_code == 400
        assert beyond.json()["error"]["details"] == [
            {"field": field, "message": f"Ensure this value is less than or equal to {MAX_POSITION}."}
        ]
