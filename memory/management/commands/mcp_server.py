"""Serve the memory MCP tools over stdio (for agents that spawn their tools).

    OMNIROUTE_TOKEN=omt_… python manage.py mcp_server
    python manage.py mcp_server --token omt_…

Prefer the environment variable: a ``--token`` argument is visible to other
users in the process list. The token is checked at start (a clear error and
a non-zero exit when it is missing, unknown, revoked, or a read/write token
bound to no API key) and again on every tool call. stdout carries the MCP
protocol only; logs go to stderr.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.exceptions import PermissionDenied
from memory.mcp.server import principal_for_secret
from memory.mcp.transport import build_stdio_server
from memory.services.auth import Unauthenticated

TOKEN_ENV = "OMNIROUTE_TOKEN"


class Command(BaseCommand):
    help = f"Serve the memory MCP tools over stdio, authenticated by a management token (--token or {TOKEN_ENV})."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--token", default=None, help=f"management token secret (default: ${TOKEN_ENV})")

    def handle(self, *args: Any, token: str | None, **options: Any) -> None:
        secret = (token or os.environ.get(TOKEN_ENV, "")).strip()
        if not secret:
            raise CommandError(f"no management token: pass --token or set {TOKEN_ENV}")
        try:
            principal = principal_for_secret(secret)
        except (Unauthenticated, PermissionDenied) as exc:
            raise CommandError(exc.message) from None
        owner_ids = principal.owner_ids
        reach = "all API keys" if owner_ids is None else f"{len(owner_ids)} API key(s)"
        self.stderr.write(f"omniroute-memory MCP server on stdio ({principal.scope} scope, {reach})")
        anyio.run(build_stdio_server(secret).run_stdio_async)
