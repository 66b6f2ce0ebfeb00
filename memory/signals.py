"""Signals other apps (the Studio's live view) subscribe to.

``memory_changed`` is sent after commit by the services with
``action`` in {"created", "updated", "deleted"}, ``owner_id`` and ``memory_id``.
"""

from django.dispatch import Signal

memory_changed = Signal()

# Sent by the reindex service after each batch: ``done`` and ``total`` (ints),
# ``finished`` (bool). The Studio relays it to open Engine tabs.
reindex_progress = Signal()

# Sent after commit by ``memory.conf.update_memory_settings`` with the new
# ``settings`` (a ``MemorySettings``). ``memory.receivers`` reschedules the
# reindex when the embedding signature no longer matches the vector index.
memory_settings_changed = Signal()

# Sent by ``memory.services.ledger`` after an injection ledger entry is committed, with ``entry_id``
# (the injection id, a UUID) and ``owner_id`` (the API key's id). The Studio relays it to open Ledger
# pages.
injection_recorded = Signal()
