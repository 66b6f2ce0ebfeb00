"""Relays ``memory_changed``, ``reindex_progress`` and ``injection_recorded`` to the channel layer.

The services send these after commit, from whatever thread did the write (a
request, a Huey worker, a management command). With the in-memory channel
layer only websockets of the same process hear them; set ``REDIS_URL`` for a
layer shared by every process. A relay failure never affects the write.

A request's thread (a sync view run by the ASGI server), and the gateway's after-response thread working
for a request, never wait for the relay: they hand the sends to the server's event loop
(``omniroute.serverloop``), which runs them after the request's own work. Waiting there (``async_to_sync``)
costs a round trip through that loop per group, and under load, when the loop and the request threads
share the GIL with a bulk import and the indexing, those round trips were a third of a single write's
latency (docs/operations.md, "Load and locking"); on the after-response thread each was a new loop on a
new thread. Other threads (Huey workers, management commands) have no server loop and send as before,
waiting for each send.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.dispatch import receiver

from dashboard.live import ALL_OWNERS_GROUP, LEDGER_GROUP, REINDEX_GROUP, owner_group
from memory.models import HEALTH_PROBE_ID
from memory.signals import injection_recorded, memory_changed, reindex_progress
from omniroute.serverloop import server_loop

logger = logging.getLogger("dashboard.live")


def _log_failure(kind: str | None, future: Future) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.warning("live update not relayed (%s)", kind, exc_info=future.exception())


def _send(groups: list[str], message: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    loop = server_loop()
    if loop is not None:
        try:
            for group in groups:  # scheduled in this order, so sent in this order
                future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
                future.add_done_callback(lambda done: _log_failure(message.get("type"), done))
        except Exception:  # the loop closed meanwhile (shutdown)
            logger.warning("live update not relayed (%s)", message.get("type"), exc_info=True)
        return
    try:
        for group in groups:
            async_to_sync(layer.group_send)(group, message)
    except Exception:
        logger.warning("live update not relayed (%s)", message.get("type"), exc_info=True)


@receiver(memory_changed, dispatch_uid="dashboard.relay_memory_changed")
def relay_memory_changed(sender, *, action, owner_id, memory_id=None, **kwargs) -> None:
    # The health check's private owner (hidden from every owner list) writes and deletes a probe every
    # 30 s per open Studio: that is nobody's news, least of all the all-owners view's.
    if str(owner_id) == str(HEALTH_PROBE_ID):
        return
    message = {
        "type": "memory.changed",
        "action": action,
        "owner_id": str(owner_id),
        "memory_id": str(memory_id) if memory_id else None,
    }
    _send([owner_group(owner_id), ALL_OWNERS_GROUP], message)


@receiver(reindex_progress, dispatch_uid="dashboard.relay_reindex_progress")
def relay_reindex_progress(sender, *, done, total, finished=False, **kwargs) -> None:
    _send(
        [REINDEX_GROUP],
        {"type": "reindex.progress", "done": int(done), "total": int(total), "finished": bool(finished)},
    )


@receiver(injection_recorded, dispatch_uid="dashboard.relay_injection_recorded")
def relay_injection_recorded(sender, *, entry_id, owner_id, **kwargs) -> None:
    _send(
        [LEDGER_GROUP],
        {"type": "injection.recorded", "entry_id": str(entry_id), "owner_id": str(owner_id)},
    )
