"""Settings for the test suite: the real ones, with background tasks run inline."""

from omniroute.settings import *  # noqa: F403
from omniroute.settings import HUEY

# Explicit, never derived from DEBUG: tasks run at enqueue time in tests.
HUEY = {**HUEY, "immediate": True}
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
MEMORY_SETTINGS_CACHE_SECONDS = 0
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
