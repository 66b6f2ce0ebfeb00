"""The Studio's websockets: memory changes of the owner on screen and reindex progress (the Memory
page), new injection ledger entries (the Ledger page)."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from dashboard.live import ALL_OWNERS_GROUP, LEDGER_GROUP, REINDEX_GROUP, owner_group

FORBIDDEN = 4403
BAD_REQUEST = 4400


def _is_staff(user) -> bool:
    return user is not None and user.is_authenticated and user.is_staff and user.is_active


class StudioConsumer(AsyncJsonWebsocketConsumer):
    """``ws/dashboard/memory/?owner=<apiKeyId|all>``: staff only; ``all`` for superusers only.

    Messages sent to the browser: ``{"type": "memory.changed", "action", "ownerId", "memoryId"}``
    and ``{"type": "reindex.progress", "done", "total", "finished"}``. It receives nothing.
    """

    async def connect(self):
        self.joined: list[str] = []
        user = self.scope.get("user")
        if not _is_staff(user):
            await self.close(code=FORBIDDEN)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        owner = (query.get("owner") or [""])[0]
        if owner == "all":
            if not user.is_superuser:
                await self.close(code=FORBIDDEN)
                return
            group = ALL_OWNERS_GROUP
        else:
            try:
                group = owner_group(uuid.UUID(owner))
            except ValueError:
                await self.close(code=BAD_REQUEST)
                return
        for name in (group, REINDEX_GROUP):
            await self.channel_layer.group_add(name, self.channel_name)
            self.joined.append(name)
        await self.accept()

    async def disconnect(self, code):
        for name in getattr(self, "joined", []):
            await self.channel_layer.group_discard(name, self.channel_name)

    async def receive_json(self, content, **kwargs):
        """The browser has nothing to say; ignore it."""

    async def memory_changed(self, event):
        await self.send_json(
            {
                "type": "memory.changed",
                "action": event["action"],
                "ownerId": event["owner_id"],
                "memoryId": event["memory_id"],
            }
        )

    async def reindex_progress(self, event):
        await self.send_json(
            {
                "type": "reindex.progress",
                "done": event["done"],
                "total": event["total"],
                "finished": event["finished"],
            }
        )


class LedgerConsumer(AsyncJsonWebsocketConsumer):
    """``ws/dashboard/ledger/``: staff only, as the Ledger page (a staff session reads every key).

    Sends ``{"type": "injection.recorded", "entryId", "ownerId"}`` when the gateway has written a
    ledger entry; the page then reloads its list with its own filters. It receives nothing.
    """

    async def connect(self):
        self.joined = False
        if not _is_staff(self.scope.get("user")):
            await self.close(code=FORBIDDEN)
            return
        await self.channel_layer.group_add(LEDGER_GROUP, self.channel_name)
        self.joined = True
        await self.accept()

    async def disconnect(self, code):
        if getattr(self, "joined", False):
            await self.channel_layer.group_discard(LEDGER_GROUP, self.channel_name)

    async def receive_json(self, content, **kwargs):
        """The browser has nothing to say; ignore it."""

    async def injection_recorded(self, event):
        await self.send_json(
            {"type": "injection.recorded", "entryId": event["entry_id"], "ownerId": event["owner_id"]}
        )
