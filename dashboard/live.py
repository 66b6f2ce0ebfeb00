"""Channel-layer groups of the Studio's live updates, shared by the receivers and the consumer."""

from __future__ import annotations

import uuid

ALL_OWNERS_GROUP = "studio.memory.all"
REINDEX_GROUP = "studio.reindex"
LEDGER_GROUP = "studio.ledger"  # every open Ledger page: staff read every key's entries


def owner_group(owner_id: uuid.UUID | str) -> str:
    """The group of one owner's open Memories tabs (names allow only ASCII letters, digits, ``-_.``)."""
    value = owner_id if isinstance(owner_id, uuid.UUID) else uuid.UUID(str(owner_id))
    return f"studio.memory.{value.hex}"
