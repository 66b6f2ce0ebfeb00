import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.exceptions import ValidationFailed
from memory.models import ApiKey, ManagementToken, TokenScope


class Command(BaseCommand):
    help = (
        "Create a management token for /api/* and MCP, bound to the API keys given with --owner. Only an "
        "admin token may go without --owner (it is then global). Prints id=<id>, then the secret alone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--scope", choices=[s.value for s in TokenScope], default="read")
        parser.add_argument("--owner", action="append", default=[], help="API key id (repeatable)")

    def handle(self, *args: Any, name: str, scope: str, owner: list[str], **options: Any) -> None:
        if not name.strip():
            raise CommandError("--name must not be blank")
        owners: list[ApiKey] = []
        for raw in owner:
            try:
                owners.append(ApiKey.objects.get(pk=uuid.UUID(raw)))
            except (ValueError, ApiKey.DoesNotExist):
                raise CommandError(f"--owner {raw!r} is not an existing API key id") from None
        try:
            token, secret = ManagementToken.issue(name=name.strip(), scope=scope, owners=owners)
        except ValidationFailed as exc:  # a read or write token without --owner
            raise CommandError(
                f"{exc.message}. Pass --owner <apiKeyId> (repeatable), or --scope admin."
            ) from None
        self.stdout.write(f"id={token.pk}")
        self.stderr.write("The secret is shown once; store it now.")
        self.stdout.write(secret)
