"""Django settings for OmniRoute Memory.

Every knob is an environment variable read through the typed helpers in
``omniroute.env``; each one is listed with its default in ``.env.example``.
A fresh clone runs with none of them set.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import redis

from omniroute.datadir import make_private
from omniroute.db.url import database_from_url
from omniroute.env import envbool, envchoice, envfloat, envint, envlist, envstr, key_bytes, request_header

BASE_DIR = Path(__file__).resolve().parent.parent

DATA_DIR = Path(envstr("OMNIROUTE_DATA_DIR", str(BASE_DIR / "data"))).resolve()
# Before anything opens a file: umask 0077, the data directory 0700 (omniroute/datadir.py).
make_private(DATA_DIR)


def _secret_key() -> str:
    # A fresh clone must run without configuration, yet never with a key that is
    # the same for everybody: generate one per data directory and keep it there.
    configured = envstr("OMNIROUTE_SECRET_KEY")
    if configured:
        return configured
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = envbool("OMNIROUTE_DEBUG", False)
ALLOWED_HOSTS = envlist("OMNIROUTE_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("OMNIROUTE_CSRF_TRUSTED_ORIGINS", [])

# Served over HTTPS (docs/deployment.md): secure cookies, the HTTPS redirect and HSTS follow from one
# switch; behind a TLS proxy, OMNIROUTE_PROXY_SSL_HEADER names the header that says the request was HTTPS.
https_served = envbool("OMNIROUTE_HTTPS", False)
SECURE_PROXY_SSL_HEADER = request_header("OMNIROUTE_PROXY_SSL_HEADER", envstr("OMNIROUTE_PROXY_SSL_HEADER"))
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = https_served
SECURE_SSL_REDIRECT = envbool("OMNIROUTE_SSL_REDIRECT", https_served)
SECURE_HSTS_SECONDS = envint("OMNIROUTE_HSTS_SECONDS", 31_536_000 if https_served else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("OMNIROUTE_HSTS_INCLUDE_SUBDOMAINS", https_served)
SECURE_HSTS_PRELOAD = envbool("OMNIROUTE_HSTS_PRELOAD", False)
# A load balancer's health probes may come over plain HTTP; /healthz and /readyz return no data.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
# security.W001 looks for Django's SecurityMiddleware by name; ours is its async subclass
# (omniroute.handlers.AsyncSecurityMiddleware), first in MIDDLEWARE and API_MIDDLEWARE, and
# tests/hardening/test_deploy.py checks that its redirect and HSTS header are served.
SILENCED_SYSTEM_CHECKS = ["security.W001"]

# The master key of the secrets stored encrypted (memory/crypto.py): 32 bytes, base64 or hex. Unset:
# a key generated into <data dir>/encryption.key at first use.
MEMORY_ENCRYPTION_KEY = key_bytes("MEMORY_ENCRYPTION_KEY", envstr("MEMORY_ENCRYPTION_KEY"))
# During a master key rotation, the old key (it only opens; docs/backends.md "Encryption at rest").
MEMORY_ENCRYPTION_KEY_PREVIOUS = key_bytes(
    "MEMORY_ENCRYPTION_KEY_PREVIOUS", envstr("MEMORY_ENCRYPTION_KEY_PREVIOUS")
)
# The owners' wrapped data keys of the encrypted memories: a file, never in the database (backups of
# the database alone then cannot be opened, and deleting a key there shreds its memories everywhere).
MEMORY_KEYRING_PATH = Path(envstr("MEMORY_KEYRING_PATH") or DATA_DIR / "memory-keyring.json").resolve()

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "channels",
    "huey.contrib.djhuey",
    "memory",
    "gateway",
    "dashboard",
]

MIDDLEWARE = [
    "omniroute.handlers.AsyncSecurityMiddleware",
    "omniroute.staticfiles.AsyncWhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A view that met a database locked past its deadline answers 503 with Retry-After, not 500.
    "omniroute.db.middleware.DatabaseBusyMiddleware",
]
# The OpenAI-compatible API (/v1/) is served by omniroute.handlers.ApiASGIHandler
# with only these (natively async) middleware: bearer-key JSON clients need no
# sessions, CSRF, messages or HTMX.
API_MIDDLEWARE = ["omniroute.handlers.AsyncSecurityMiddleware"]
# /api/ requests with a bearer token and no cookie (machine clients: no session, no CSRF) are served the
# same way, keeping the response headers MIDDLEWARE gives them (Content-Length, X-Frame-Options).
REST_API_MIDDLEWARE = [
    "omniroute.handlers.AsyncSecurityMiddleware",
    "omniroute.handlers.AsyncCommonMiddleware",
    "omniroute.handlers.AsyncXFrameOptionsMiddleware",
]

ROOT_URLCONF = "omniroute.urls"
WSGI_APPLICATION = "omniroute.wsgi.application"
ASGI_APPLICATION = "omniroute.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The embedded default: SQLite through our backend (extension loading, FTS5,
# sqlite-vec, WAL, IMMEDIATE write transactions). See omniroute/db/base.py.
# DATABASE_URL (postgres://user:password@host:5432/name) selects PostgreSQL instead (omniroute/db/url.py,
# docs/deployment.md "PostgreSQL"); OMNIROUTE_TEST_DATABASE_NAME names its test database.
DATABASE_URL = envstr("DATABASE_URL").strip()
if DATABASE_URL:
    DATABASES = {
        "default": database_from_url(DATABASE_URL, test_name=envstr("OMNIROUTE_TEST_DATABASE_NAME") or None)
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "omniroute.db",
            "NAME": envstr("OMNIROUTE_DB_PATH", str(DATA_DIR / "omniroute.sqlite3")),
            "OPTIONS": {
                "timeout": envint("OMNIROUTE_DB_BUSY_TIMEOUT_MS", 5000, minimum=0) / 1000,
                "transaction_mode": "IMMEDIATE",
            },
            "TEST": {"NAME": envstr("OMNIROUTE_TEST_DB_PATH", "") or None},
        }
    }
SQLITE_MMAP_SIZE = envint("OMNIROUTE_SQLITE_MMAP_SIZE", 268435456, minimum=0)
# Open connections kept for the next request, per database file (omniroute/db/pool.py); 0: a new
# connection for every request, as Django does.
SQLITE_POOL_SIZE = envint("OMNIROUTE_SQLITE_POOL_SIZE", 8, minimum=0)
# Test seam (as in the original): run without sqlite-vec.
VECTOR_STORE_DISABLE_VEC = envbool("VECTOR_STORE_DISABLE_VEC", False)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

LOGIN_URL = "/admin/login/"
LOGIN_REDIRECT_URL = "/dashboard/memory"

# Request bodies: one limit for every JSON route (413 above it).
OMNIROUTE_MAX_BODY_BYTES = envint("OMNIROUTE_MAX_BODY_BYTES", 32 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = OMNIROUTE_MAX_BODY_BYTES
MEMORY_MAX_CONTENT_BYTES = envint("MEMORY_MAX_CONTENT_BYTES", 64 * 1024, minimum=16)
MEMORY_BULK_MAX_ITEMS = envint("MEMORY_BULK_MAX_ITEMS", 10_000, minimum=1)

# Defaults of the DB-stored runtime settings (memory/conf.py); the Studio and
# PUT /api/settings/memory override them.
MEMORY_ENABLED = envbool("MEMORY_ENABLED", False)
MEMORY_MAX_TOKENS = envint("MEMORY_MAX_TOKENS", 2000, minimum=0, maximum=16000)
MEMORY_RETENTION_DAYS = envint("MEMORY_RETENTION_DAYS", 30, minimum=1, maximum=365)
# Audit events of destructive operations older than this are deleted by the nightly lifecycle task.
MEMORY_AUDIT_RETENTION_DAYS = envint("MEMORY_AUDIT_RETENTION_DAYS", 365, minimum=1, maximum=3650)
# Injection ledger entries (what the gateway injected into each answer) older than this are deleted by
# the nightly lifecycle task; 0 keeps no ledger at all (memory.services.ledger).
MEMORY_LEDGER_RETENTION_DAYS = envint("MEMORY_LEDGER_RETENTION_DAYS", 30, minimum=0, maximum=3650)
MEMORY_STRATEGY = envchoice("MEMORY_STRATEGY", "hybrid", ("recent", "keyword", "semantic", "hybrid"))
MEMORY_EMBEDDING_SOURCE = envchoice(
    "MEMORY_EMBEDDING_SOURCE", "auto", ("remote", "static", "transformers", "auto")
)
MEMORY_VECTOR_STORE = envchoice("MEMORY_VECTOR_STORE", "auto", ("sqlite-vec", "qdrant", "auto"))
# On PostgreSQL: "auto" uses pgvector (memory/vectorstores/pgvector.py) when the extension is installed
# or can be created, else the plain column; "pg-column" forces the plain column (docs/deployment.md "pgvector").
MEMORY_PG_VECTOR_STORE = envchoice("MEMORY_PG_VECTOR_STORE", "auto", ("auto", "pg-column"))
MEMORY_VEC_QUANTIZATION = envchoice("MEMORY_VEC_QUANTIZATION", "none", ("none", "int8"))
MEMORY_VEC_CACHE_MB = envint("MEMORY_VEC_CACHE_MB", 1024, minimum=0)
MEMORY_EMBED_THREADS = envint("MEMORY_EMBED_THREADS", os.cpu_count() or 1, minimum=1)
MEMORY_EMBED_QUERY_THREADS = envint("MEMORY_EMBED_QUERY_THREADS", os.cpu_count() or 1, minimum=1, maximum=256)
# numpy's BLAS threads in each process (memory/embeddings/blas.py); 0 = the library's own default.
MEMORY_BLAS_THREADS = envint("MEMORY_BLAS_THREADS", 1, minimum=0, maximum=256)
# Unset: each embedding model's own floor (memory.embeddings.catalog); set: this floor for every model.
MEMORY_VEC_MIN_SCORE: float | None = (
    envfloat("MEMORY_VEC_MIN_SCORE", 0.0) if envstr("MEMORY_VEC_MIN_SCORE").strip() else None
)
MEMORY_ACCESS_FLUSH_SECONDS = envfloat("MEMORY_ACCESS_FLUSH_SECONDS", 1.0, minimum=0)
MEMORY_FTS_COMMON_SHARE = envfloat("MEMORY_FTS_COMMON_SHARE", 0.05, minimum=0)
MEMORY_FTS_COMMON_MIN_DOCS = envint("MEMORY_FTS_COMMON_MIN_DOCS", 200, minimum=1)
MEMORY_CHAT_MAX_MEMORIES = envint("MEMORY_CHAT_MAX_MEMORIES", 20, minimum=1, maximum=100)
MEMORY_FUSION = envchoice("MEMORY_FUSION", "normalized", ("normalized", "rrf"))
MEMORY_EMBEDDING_CACHE_MAX = envint("MEMORY_EMBEDDING_CACHE_MAX", 1000, minimum=0)
MEMORY_EMBEDDING_CACHE_TTL_MS = envint("MEMORY_EMBEDDING_CACHE_TTL_MS", 300_000, minimum=0)
MEMORY_STATIC_ENABLED = envbool("MEMORY_STATIC_ENABLED", True)
MEMORY_TRANSFORMERS_ENABLED = envbool("MEMORY_TRANSFORMERS_ENABLED", True)
MEMORY_TRANSFORMERS_FAST = envbool("MEMORY_TRANSFORMERS_FAST", False)
# The default of the transformersModel setting (memory.embeddings.catalog.TRANSFORMERS_MODELS).
MEMORY_TRANSFORMERS_MODEL = envchoice(
    "MEMORY_TRANSFORMERS_MODEL", "auto", ("auto", "all-MiniLM-L6-v2", "bge-small-en-v1.5")
)
MEMORY_ALLOW_PRIVATE_URLS = envbool("MEMORY_ALLOW_PRIVATE_URLS", False)
MEMORY_RERANK_TIMEOUT_SECONDS = envint("MEMORY_RERANK_TIMEOUT_SECONDS", 5, minimum=1)
# Per request to a remote embedding endpoint (memory.embeddings.remote); a chat waits at most this
# long for its query vector before it falls back to keyword search.
MEMORY_EMBEDDING_TIMEOUT_SECONDS = envfloat("MEMORY_EMBEDDING_TIMEOUT_SECONDS", 10.0, minimum=0.1)
# The circuit breakers of the remote dependencies (memory.breaker): open after this many failures in a
# row, then one trial after the cool-down.
MEMORY_BREAKER_FAILURES = envint("MEMORY_BREAKER_FAILURES", 3, minimum=1, maximum=1000)
MEMORY_BREAKER_COOLDOWN_SECONDS = envfloat("MEMORY_BREAKER_COOLDOWN_SECONDS", 30.0, minimum=0)
MEMORY_MODELS_DIR = Path(envstr("MEMORY_MODELS_DIR", str(DATA_DIR / "models")))
# The longest a process keeps the stored settings (and the upstream providers) without reloading them; a
# save in any process is seen by every other within about a second anyway (memory.conf.Cached's stamp).
MEMORY_SETTINGS_CACHE_SECONDS = envint("MEMORY_SETTINGS_CACHE_SECONDS", 30, minimum=0)
# Internal tuning (candidate counts, batch and chunk sizes, algorithm thresholds) is not configured
# here: each value is a constant beside its reader, with the reason for it.

# Defaults of the DB-stored Qdrant settings (memory/qdrant_conf.py); the Studio and
# PUT /api/settings/qdrant override them.
QDRANT_HOST = envstr("QDRANT_HOST").strip() or envstr("QDRANT_URL").strip()
QDRANT_PORT = envint("QDRANT_PORT", 6333, minimum=1, maximum=65535)
QDRANT_API_KEY = envstr("QDRANT_API_KEY").strip()
QDRANT_COLLECTION = envstr("QDRANT_COLLECTION", "omniroute_memory").strip()
QDRANT_TIMEOUT_SECONDS = envint("QDRANT_TIMEOUT_SECONDS", 5, minimum=1, maximum=300)

# Upstream LLM provider seeded into the database on first start (gateway/).
UPSTREAM_BASE_URL = envstr("UPSTREAM_BASE_URL", "")
UPSTREAM_API_KEY = envstr("UPSTREAM_API_KEY", "")
UPSTREAM_TIMEOUT_SECONDS = envint("UPSTREAM_TIMEOUT_SECONDS", 120, minimum=1)

# Background jobs. SQLite file by default (no extra server); Redis when REDIS_URL is set.
REDIS_URL = envstr("REDIS_URL", "")
HUEY_IMMEDIATE = envbool("HUEY_IMMEDIATE", False)
# Idle workers poll the queue with a back-off capped at max_delay (Huey's
# default, 10 s, would let a learned fact wait that long before it is stored).
# How long a stopping process waits, on SIGTERM, for its in-flight HTTP requests and then for the tasks its
# consumer is running (docs/deployment.md "Shutdown"); queued tasks that have not started stay in the queue.
# The niceness (0..19) of the task threads inside `serve` on Linux: background work (indexing, extraction)
# yields the CPU to requests when both want it, and still has all of it when requests are idle. 0 = off.
OMNIROUTE_TASK_NICE = envint("OMNIROUTE_TASK_NICE", 10, minimum=0, maximum=19)
OMNIROUTE_SHUTDOWN_TIMEOUT_SECONDS = envint("OMNIROUTE_SHUTDOWN_TIMEOUT_SECONDS", 30, minimum=1, maximum=3600)
HUEY_CONSUMER = {
    "workers": 2,
    "worker_type": "thread",
    "initial_delay": 0.1,
    "backoff": 1.15,
    "max_delay": 1.0,
    # SIGTERM (what systemd, Docker and Kubernetes send) drains a run_huey consumer: running tasks finish
    # within the timeout, the rest stay queued. Huey's default would interrupt them on SIGTERM.
    "graceful_signal": "TERM",
    "shutdown_timeout": OMNIROUTE_SHUTDOWN_TIMEOUT_SECONDS,
}
# A Redis that accepts connections but never answers must not hold a request: every queue call gives up
# after this long (above the consumer's 1 s blocking read), and the hand-off after commit logs it.
REDIS_SOCKET_TIMEOUT_SECONDS = envfloat("REDIS_SOCKET_TIMEOUT_SECONDS", 5.0, minimum=1.5)
if REDIS_URL:
    HUEY = {
        "huey_class": "huey.RedisHuey",
        "name": "omniroute",
        # A pool of our own, for its timeouts (Huey's ``url`` takes none).
        "connection_pool": redis.ConnectionPool.from_url(
            REDIS_URL,
            socket_timeout=REDIS_SOCKET_TIMEOUT_SECONDS,
            socket_connect_timeout=REDIS_SOCKET_TIMEOUT_SECONDS,
        ),
        "immediate": HUEY_IMMEDIATE,
        "consumer": HUEY_CONSUMER,
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    HUEY = {
        "huey_class": "omniroute.taskqueue.SqliteWalHuey",
        "name": "omniroute",
        "filename": str(DATA_DIR / "huey.sqlite3"),
        "immediate": HUEY_IMMEDIATE,
        "consumer": HUEY_CONSUMER,
    }
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Django's cache: where the auth throttle (memory.services.throttle) keeps its counts. Local memory (one
# process) by default; with REDIS_URL, Redis, so that every process counts the same failures.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Throttling of authentication failures (memory.services.throttle): API tokens, gateway keys, MCP
# tokens and Studio sign-ins. A client address, or a credential (a secret's first 12 characters; a
# sign-in's username), that fails this many times within the window is locked out for the lockout
# time, doubled for each lockout before it, up to the cap; every attempt meanwhile answers 429.
OMNIROUTE_AUTH_FAILURE_WINDOW_SECONDS = envint("OMNIROUTE_AUTH_FAILURE_WINDOW_SECONDS", 300, minimum=1)
OMNIROUTE_AUTH_FAILURES_PER_IP = envint("OMNIROUTE_AUTH_FAILURES_PER_IP", 20, minimum=1)
OMNIROUTE_AUTH_FAILURES_PER_CREDENTIAL = envint("OMNIROUTE_AUTH_FAILURES_PER_CREDENTIAL", 10, minimum=1)
OMNIROUTE_LOGIN_FAILURES_PER_USER = envint("OMNIROUTE_LOGIN_FAILURES_PER_USER", 5, minimum=1)
OMNIROUTE_AUTH_LOCKOUT_SECONDS = envint("OMNIROUTE_AUTH_LOCKOUT_SECONDS", 60, minimum=1)
OMNIROUTE_AUTH_LOCKOUT_MAX_SECONDS = envint("OMNIROUTE_AUTH_LOCKOUT_MAX_SECONDS", 3600, minimum=1)
# How many reverse proxies in front append to X-Forwarded-For; 0 (the default): the client address is
# REMOTE_ADDR and X-Forwarded-For, which any client can write, is ignored.
OMNIROUTE_TRUSTED_PROXY_COUNT = envint("OMNIROUTE_TRUSTED_PROXY_COUNT", 0, minimum=0, maximum=10)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "memory.api.auth.ManagementTokenAuthentication",
        "memory.api.auth.StaffSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["memory.api.auth.HasScope"],
    "DEFAULT_PARSER_CLASSES": ["memory.api.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "memory.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "OmniRoute Memory API",
    "DESCRIPTION": "Persistent per-API-key memory for LLM applications.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Choice sets that several components share under one field name (one enum each in the schema).
    "ENUM_NAME_OVERRIDES": {
        "SettingsStrategyEnum": "memory.conf.STRATEGIES",
        "RetrievalStrategyEnum": "memory.retrieval.engine.STRATEGIES",
        "SettingsVectorStoreEnum": "memory.conf.VECTOR_STORES",
        # Two choice sets of fields named "type": each needs its name.
        "TypeEnum": "memory.models.MemoryType",
        "ProviderTypeEnum": "memory.api.views_providers.TYPE_NAMES",
    },
}

LOG_LEVEL = envchoice("OMNIROUTE_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "memory": {"level": LOG_LEVEL},
        "gateway": {"level": LOG_LEVEL},
        "dashboard": {"level": LOG_LEVEL},
        "huey": {"level": "INFO"},
    },
}
