"""What ``memory`` does when its own signals fire."""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import receiver

from memory.services import indexing
from memory.signals import memory_settings_changed

logger = logging.getLogger("memory.indexing")


@receiver(memory_settings_changed, dispatch_uid="memory.reindex_if_stale")
def reindex_if_the_signature_changed(sender: object, **kwargs: Any) -> None:
    """A new embedding source, model or dimension schedules the rebuild of the vector index.

    The settings are already committed: a failure here must not fail their write, and the
    first read that meets the stale index schedules the reindex again.
    """
    try:
        indexing.reindex_if_stale()
    except Exception:
        logger.exception("checking the vector index after a settings change failed")
