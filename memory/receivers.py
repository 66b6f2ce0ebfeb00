"""What ``memory`` does when its own signals, or Django's for its models, fire."""

from __future__ import annotations

import logging
from typing import Any

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from memory.models import ApiKey
from memory.services import indexing, vectorsync
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


@receiver(pre_delete, sender=ApiKey, dispatch_uid="memory.vectors_of_a_deleted_key")
def forget_the_vectors_of_a_deleted_key(sender: object, instance: ApiKey, **kwargs: Any) -> None:
    """A key's memories go with it in SQL (the cascade), however the key is deleted (the admin, a
    command, the evaluation's clean-up): every vector index must drop them too."""
    vectorsync.before_owner_delete(instance.pk)
