"""Signals other apps (the Studio's live view) subscribe to.

``memory_changed`` is sent after commit by the services with
``action`` in {"created", "updated", "deleted"}, ``owner_id`` and ``memory_id``.
"""

from django.dispatch import Signal

memory_changed = Signal()
