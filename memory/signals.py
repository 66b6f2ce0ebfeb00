"""Signals other apps (the Studio's live view) subscribe to.

``memory_changed`` is sent after commit by the services with
``action`` in {"created", "updated", "deleted"}, ``owner_id`` and ``memory_id``.
"""

from django.dispatch import Signal

memory_changed = Signal()

# Sent by the reindex service after each batch: ``done`` and ``total`` (ints),
# ``finished`` (bool). The Studio relays it to open Engine tabs.
reindex_progress = Signal()
