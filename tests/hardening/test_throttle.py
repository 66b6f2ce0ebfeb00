"""Authentication failures are throttled (memory.services.throttle): per client address and per
credential, on the REST API, the gateway, MCP over HTTP and the Studio sign-in; 429 with Retry-After
after the threshold, lockouts that double and expire, successes never counted, and the counts shared
by every process through Redis."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from memory.mcp.transport import McpHttpApp
from memory.models import ApiKey, ManagementToken
from memory.services.throttle import AUTH_FAILURES, Throttled, client_ip, scope_ip

ROOT = Path(__file__).resolve().parents[2]
ATTACKER = "203.0.113.7"
ELSEWHERE = "198.51.100.20"


def bad_token() -> str:
    return "omt_" + secrets.token_urlsafe(32)


@pytest.fixture(autouse=True)
def clients() -> None:
    """One client of each kind per test: a new Django test client loads every middleware again (the
    static files' among them), which would cost more than the requests."""
    CLIENTS["rest"], CLIENTS["studio"] = APIClient(), Client()


CLIENTS: dict[str, Client] = {}


def rest_get(secret: str, ip: str, **extra):
    return CLIENTS["rest"].get("/api/memory", HTTP_AUTHORIZATION=f"Bearer {secret}", REMOTE_ADDR=ip, **extra)


@pytest.fixture
def alice_token(alice) -> str:
    return ManagementToken.issue(name="alice-read", scope="read", owners=[alice])[1]


# -- the REST API ------------------------------------------------------------------------------------------


def test_300_bad_tokens_get_429_after_the_threshold_and_a_good_token_from_elsewhere_works(
    db, settings, alice_token
):
    settings.OMNIROUTE_AUTH_FAILURES_PER_IP = 20
    answers = [rest_get(bad_token(), ATTACKER) for _ in range(300)]
    statuses = [a.status_code for a in answers]
    assert statuses == [401] * 20 + [429] * 280
    last = answers[-1]
    assert 1 <= int(last["Retry-After"]) <= settings.OMNIROUTE_AUTH_LOCKOUT_SECONDS
    error = last.json()["error"]
    assert error["type"] == "rate_limit_error"
    assert "from this address" in error["message"]

    assert rest_get(alice_token, ELSEWHERE).status_code == 200
    # The locked-out address is refused even a right token: a lockout that let a hit through would
    # still tell a guesser when it hit.
    assert rest_get(alice_token, ATTACKER).status_code == 429


def test_successful_requests_are_never_counted(db, settings, alice_token):
    settings.OMNIROUTE_AUTH_FAILURES_PER_IP = 5
    assert {rest_get(alice_token, ATTACKER).status_code for _ in range(100)} == {200}
    statuses = [rest_get(bad_token(), ATTACKER).status_code for _ in range(6)]
    assert statuses == [401] * 5 + [429]


def test_one_credential_prefix_is_locked_whatever_the_address(db, settings, alice_token):
    """Completing a known prefix from many addresses: the prefix's own count locks it."""
    settings.OMNIROUTE_AUTH_FAILURES_PER_CREDENTIAL = 10
    prefix = alice_token[:12]
    guesses = [prefix + secrets.token_urlsafe(24) for _ in range(11)]
    statuses = [rest_get(guess, f"192.0.2.{n + 1}").status_code for n, guess in enumerate(guesses)]
    assert statuses == [401] * 10 + [429]
    refused = rest_get(prefix + "x" * 20, "192.0.2.200")
    assert "from this credential" in refused.json()["error"]["message"]
    # Another credential, from a fresh address, is not affected.
    assert rest_get(bad_token(), "192.0.2.201").status_code == 401


def test_the_lockout_expires_and_doubles(db, settings, alice_token):
    settings.OMNIROUTE_AUTH_FAILURES_PER_IP = 3
    settings.OMNIROUTE_AUTH_LOCKOUT_SECONDS = 1
    assert [rest_get(bad_token(), ATTACKER).status_code for _ in range(4)] == [401, 401, 401, 429]
    assert rest_get(alice_token, ATTACKER)["Retry-After"] == "1"
    time.sleep(1.1)
    assert rest_get(alice_token, ATTACKER).status_code == 200  # expired
    assert [rest_get(bad_token(), ATTACKER).status_code for _ in range(4)] == [401, 401, 401, 429]
    assert rest_get(alice_token, ATTACKER)["Retry-After"] == "2"  # the second lockout: doubled


def test_the_doubling_stops_at_the_cap(db, settings):
    settings.OMNIROUTE_AUTH_FAILURES_PER_IP = 2
    settings.OMNIROUTE_AUTH_LOCKOUT_SECONDS = 1
    settings.OMNIROUTE_AUTH_LOCKOUT_MAX_SECONDS = 1
    waits = []
    for _ in range(2):
        for _ in range(2):
            AUTH_FAILURES.check(ip=ATTACKER, credential="")
            AUTH_FAILURES.fail(ip=ATTACKER, credential="")
        with pytest.raises(Throttled) as refused:
            AUTH_FAILURES.check(ip=ATTACKER, credential="")
        waits.append(refused.value.retry_after)
        time.sleep(1.1)
    assert waits == [1, 1]


def test_x_forwarded_for_is_ignored_unless_a_proxy_is_trusted(db, settings):
    settings.OMNIROUTE_AUTH_FAILURES_PER_IP = 3
    # A client writing its own X-Forwarded-For does not get a fresh address for each guess.
    statuses = [
        rest_get(bad_token(), ATTACKER, HTTP_X_FORWARDED_FOR=f"10.9.0.{n}").status_code for n in range(4)
    ]
    assert statuses == [401, 401, 401, 429]

    assert client_ip("10.0.0.5", "1.2.3.4, 203.0.113.9") == "10.0.0.5"
    settings.OMNIROUTE_TRUSTED_PROXY_COUNT = 1
    # One proxy appends what it saw; what the client wrote before that is not believed.
    assert client_ip("10.0.0.5", "1.2.3.4, 203.0.113.9") == "203.0.113.9"
    settings.OMNIROUTE_TRUSTED_PROXY_COUNT = 2
    assert client_ip("10.0.0.5", "1.2.3.4, 203.0.113.9, 10.0.0.4") == "203.0.113.9"
    assert client_ip("10.0.0.5", "junk") == "10.0.0.5"
    # An IPv6 host is counted by its /64, which it usually holds whole.
    assert client_ip("2001:db8::1") == client_ip("2001:db8::ffff:1") == "2001:db8::/64"
    assert client_ip("::ffff:203.0.113.9") == "203.0.113.9"


def test_a_cache_that_cannot_be_reached_lets_requests_through(db, settings, alice_token, caplog):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
        }
    }
    assert rest_get(bad_token(), ATTACKER).status_code == 401
    assert rest_get(alice_token, ATTACKER).status_code == 200
    assert "the cache is unavailable" in caplog.text


# -- the gateway -------------------------------------------------------------------------------------------


def test_300_bad_gateway_keys_get_openai_shaped_429s(transactional_db, settings):
    settings.OMNIROUTE_AUTH_FAILURES_PER_IP = 20
    client = Client()
    statuses = []
    for _ in range(300):
        answer = client.get(
            "/v1/models",
            HTTP_AUTHORIZATION=f"Bearer sk-omr-{secrets.token_urlsafe(32)}",
            REMOTE_ADDR=ATTACKER,
        )
        statuses.append(answer.status_code)
    assert statuses == [401] * 20 + [429] * 280
    assert int(answer["Retry-After"]) >= 1
    assert answer.json()["error"]["type"] == "rate_limit_error"
    assert answer.json()["error"]["code"] == "rate_limit_exceeded"

    chat = client.post(
        "/v1/chat/completions",
        data=b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer sk-omr-{secrets.token_urlsafe(32)}",
        REMOTE_ADDR=ATTACKER,
    )
    assert chat.status_code == 429 and chat["Retry-After"]

    _key, secret = ApiKey.issue(name="carol")
    good = client.get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {secret}", REMOTE_ADDR=ELSEWHERE)
    assert good.status_code == 200


# -- MCP over HTTP -----------------------------------------------------------------------------------------


def _mcp_answer(app: McpHttpApp, secret: str, ip: str) -> tuple[int, dict[str, str]]:
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {secret}".encode())],
        "client": (ip, 40000),
    }
    async_to_sync(app)(scope, receive, send)
    start = sent[0]
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}


def test_bad_mcp_tokens_get_429_after_the_threshold(db, settings):
    settings.OMNIROUTE_AUTH_FAILURES_PER_IP = 20
    app = McpHttpApp()
    answers = [_mcp_answer(app, bad_token(), ATTACKER) for _ in range(30)]
    assert [status for status, _ in answers] == [401] * 20 + [429] * 10
    assert int(answers[-1][1]["retry-after"]) >= 1
    assert scope_ip({"client": ("::ffff:198.51.100.3", 1), "headers": []}) == "198.51.100.3"


# -- the Studio sign-in ------------------------------------------------------------------------------------


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_user("operator", password="right-password-1", is_staff=True)


def sign_in(username: str, password: str, ip: str):
    CLIENTS["studio"].logout()
    return CLIENTS["studio"].post(
        "/admin/login/?next=/dashboard/memory", {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def test_30_bad_sign_ins_are_locked_out_by_address(staff, settings):
    settings.OMNIROUTE_AUTH_FAILURES_PER_IP = 20
    answers = [sign_in(f"guess{n}", "wrong", ATTACKER) for n in range(30)]
    assert [a.status_code for a in answers] == [200] * 20 + [429] * 10
    assert "Please enter the correct username and password" in answers[0].content.decode()
    refused = answers[-1]
    assert "Too many failed sign-ins from this address" in refused.content.decode()
    assert int(refused["Retry-After"]) >= 1


def test_a_username_is_locked_after_its_failures_and_the_lockout_expires(staff, settings):
    settings.OMNIROUTE_LOGIN_FAILURES_PER_USER = 5
    settings.OMNIROUTE_AUTH_LOCKOUT_SECONDS = 1
    answers = [sign_in("operator", "wrong", f"192.0.2.{n + 1}") for n in range(6)]
    assert [a.status_code for a in answers] == [200] * 5 + [429]
    assert (
        "Too many failed sign-ins from this username. Try again in 1 seconds." in answers[-1].content.decode()
    )
    # The right password is refused too while the username is locked (in any case of its letters).
    assert sign_in("OPERATOR", "right-password-1", ELSEWHERE).status_code == 429
    time.sleep(1.1)
    signed_in = sign_in("operator", "right-password-1", ELSEWHERE)
    assert signed_in.status_code == 302
    assert signed_in["Location"] == "/dashboard/memory"


# -- across processes, through Redis -----------------------------------------------------------------------


@pytest.fixture
def redis_url(tmp_path) -> str:
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


FAIL_IN_ANOTHER_PROCESS = """
import django
django.setup()
from django.conf import settings
from memory.services.throttle import AUTH_FAILURES
assert settings.CACHES["default"]["BACKEND"].endswith("RedisCache"), settings.CACHES
for _ in range(settings.OMNIROUTE_AUTH_FAILURES_PER_IP):
    AUTH_FAILURES.fail(ip="203.0.113.7", credential="")
"""


def test_with_redis_every_process_counts_the_same_failures(db, settings, alice_token, redis_url, tmp_path):
    """Failures counted by another process (the real settings, REDIS_URL set) lock this one's door."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "omniroute.settings",
        "REDIS_URL": redis_url,
        "OMNIROUTE_DATA_DIR": str(tmp_path / "data"),
        "OMNIROUTE_SECRET_KEY": "test",
        "OMNIROUTE_AUTH_FAILURES_PER_IP": "4",
    }
    subprocess.run(
        [sys.executable, "-c", FAIL_IN_ANOTHER_PROCESS], cwd=ROOT, env=env, check=True, timeout=120
    )
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}
    }
    refused = rest_get(alice_token, ATTACKER)
    assert refused.status_code == 429
    assert rest_get(alice_token, ELSEWHERE).status_code == 200
