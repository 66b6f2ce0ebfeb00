"""Re-wrap the memories' data keys (and re-encrypt the stored secrets) under the current master key."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.backends.base import BackendError
from memory.crypto import SecretUnreadable
from memory.services.encryption import keyring, rotate_master_key


class Command(BaseCommand):
    help = (
        "Finish a master key rotation: with the new key in MEMORY_ENCRYPTION_KEY and the old one in "
        "MEMORY_ENCRYPTION_KEY_PREVIOUS, re-wrap every memory data key and re-encrypt the stored secrets "
        "under the new key. Safe while serving and to run again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check", action="store_true", help="only report which master keys wrap the data keys"
        )

    def handle(self, *args: Any, check: bool, **options: Any) -> None:
        try:
            if check:
                state = keyring().describe()
                wrapped = ", ".join(f"{key}: {n}" for key, n in sorted(state["wrappedBy"].items())) or "none"
                self.stdout.write(
                    f"{state['dataKeys']} data keys of {state['owners']} owners; current master key "
                    f"{state['masterKey']}; wrapped by {wrapped}"
                )
                if state["rotationPending"]:
                    raise CommandError(
                        "some data keys are wrapped by another master key: run without --check"
                    )
                return
            result = rotate_master_key()
        except (BackendError, SecretUnreadable) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"{result['rewrapped']} of {result['dataKeys']} data keys re-wrapped and {result['secrets']} "
            f"secrets re-encrypted under master key {result['masterKey']}; "
            "MEMORY_ENCRYPTION_KEY_PREVIOUS can now be removed"
        )
