"""First-start setup for `make run`: an admin user and a first API key + token.

Idempotent: does nothing when a superuser already exists. Credentials are
written to <data dir>/first-run-credentials.txt (mode 600) and printed once,
with the Studio's and the gateway's addresses: ``--host`` and ``--port`` are
``serve``'s options with its defaults, and ``make run`` passes the same values
to both commands, so the address printed is the one served.
First, in every case, the data directory is made private (0700, files 0600) if an
older install left it readable by others; what changed is logged.
"""

import logging
import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from memory.management.commands.serve import add_address_arguments, base_url
from memory.models import ApiKey, ManagementToken, TokenScope
from omniroute.datadir import tighten_install

logger = logging.getLogger("memory.bootstrap")


class Command(BaseCommand):
    help = "Create the first admin user, API key and admin token if none exist."

    def add_arguments(self, parser: CommandParser) -> None:
        add_address_arguments(parser)

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        tightened = tighten_install()
        if tightened:
            logger.warning(tightened)
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("Admin user exists; nothing to bootstrap.")
            return
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser("admin", "", password)
        key, key_secret = ApiKey.issue(name="default")
        token, token_secret = ManagementToken.issue(name="bootstrap-admin", scope=TokenScope.ADMIN)
        url = base_url(host, port)
        lines = [
            "OmniRoute Memory — first-run credentials (shown once)",
            f"Studio:  {url}/dashboard/memory  user=admin  password={password}",
            f"Gateway: {url}/v1  (OpenAI-compatible base URL)",
            f"API key (gateway, owner id {key.pk}): {key_secret}",
            f"Management token (admin, global): {token_secret}",
        ]
        path = settings.DATA_DIR / "first-run-credentials.txt"
        path.write_text("\n".join(lines) + "\n")
        path.chmod(0o600)
        self.stdout.write("\n".join(lines))
        self.stdout.write(f"(also saved to {path})")
