from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.models import ApiKey


class Command(BaseCommand):
    help = "Create a client API key. Prints id=<id> (the memory owner id), then the secret alone."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--allow-global-scope", action="store_true")

    def handle(self, *args: Any, name: str, allow_global_scope: bool, **options: Any) -> None:
        if not name.strip():
            raise CommandError("--name must not be blank")
        key, secret = ApiKey.issue(name=name.strip(), allow_global_scope=allow_global_scope)
        self.stdout.write(f"id={key.pk}")
        self.stderr.write("The secret is shown once; store it now.")
        self.stdout.write(secret)
