"""Rows of every kind that an instance move carries, written through the services into a source
instance (run inside its ``manage.py shell``), and a description of them read back on either side.

``seed()`` fills one instance; ``describe()`` returns what the tests compare between the source and
the target: the secrets opened with the instance's keys (so that "readable on the target" is
checked, not only "the same ciphertext"), the cognitive history, the owners of every row.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)


def seed(*, extra_memories: int = 0) -> dict[str, Any]:
    from django.contrib.admin.models import ADDITION, LogEntry
    from django.contrib.auth.models import Group, Permission, User
    from django.contrib.contenttypes.models import ContentType

    from gateway.models import UpstreamProvider
    from memory import store
    from memory.conf import update_memory_settings
    from memory.models import (
        ApiKey,
        InjectionEntry,
        ManagementToken,
        MemoryProvider,
        PendingProviderWrite,
        ProviderFallback,
        TokenScope,
    )
    from memory.services.memories import MemoryInput

    staff = User.objects.create_user("operator", "op@example.com", "s3cret-passw0rd", is_staff=True)
    group = Group.objects.create(name="curators")
    group.permissions.add(Permission.objects.get(codename="view_memory"))
    staff.groups.add(group)
    staff.user_permissions.add(Permission.objects.get(codename="change_apikey"))
    LogEntry.objects.create(
        user=staff,
        content_type=ContentType.objects.get_for_model(ApiKey),
        object_id="1",
        object_repr="alice",
        action_flag=ADDITION,
        change_message="[]",
    )
    update_memory_settings({"maxTokens": 1234, "customApiKey": "sk-remote-secret"})

    primary = MemoryProvider(name="scratch", type="inmemory")
    primary.config = {"note": "provider secret"}
    primary.save()
    spare = MemoryProvider(name="spare", type="inmemory")
    spare.save()

    alice, _ = ApiKey.issue(name="alice")
    bob, _ = ApiKey.issue(name="bob", allow_global_scope=True)
    carol, _ = ApiKey.issue(name="carol", provider=primary)
    ProviderFallback.objects.create(api_key=carol, provider=spare, position=0)
    ManagementToken.issue(name="alice-read", scope=TokenScope.READ, owners=[alice])
    ManagementToken.issue(name="admin", scope=TokenScope.ADMIN)

    def write(owner: ApiKey, content: str, at: datetime, **fields: Any) -> None:
        store.memory_create(MemoryInput(owner=owner, content=content, created_at=at, **fields))

    write(alice, "I love cats", T0)
    write(alice, "I hate cats", T0 + timedelta(days=30))
    write(alice, "I live in Leeds", T0, key="home:city", metadata={"source": "seed", "n": 1})
    write(alice, "My favourite editor is Helix", T0, session_id="s-1", importance=0.9)
    write(bob, "I prefer green tea in the morning", T0, expires_at=datetime(2099, 1, 1, tzinfo=UTC))
    write(bob, "I work as a carpenter in Porto", T0 + timedelta(days=2))
    for i in range(extra_memories):
        write(
            alice if i % 2 else bob, f"Fact number {i}: the code word is word{i}", T0 + timedelta(minutes=i)
        )

    InjectionEntry.objects.create(
        api_key=alice,
        model="gpt-test",
        strategy="hybrid",
        tiers=["semantic"],
        memories=[{"id": "x", "rank": 1}],
        total_tokens=12,
        latency_ms=3.5,
        system_message="Known about the user: I hate cats",
        query="do I like cats",
    )
    PendingProviderWrite.objects.create(
        owner=carol.pk,
        primary="scratch",
        fallback="spare",
        operation="store",
        memory_id=carol.pk,
        payload=json.dumps({"content": "waiting for the provider"}),
    )
    UpstreamProvider.objects.create(
        name="openai", base_url="https://api.openai.com/v1", api_key="sk-upstream-1"
    )
    return {"alice": str(alice.pk), "bob": str(bob.pk), "carol": str(carol.pk)}


def describe() -> dict[str, Any]:
    """What a user of this instance sees, secrets opened: compared between source and target."""
    from django.contrib.auth.models import User

    from gateway.models import UpstreamProvider
    from memory.conf import get_memory_settings
    from memory.models import (
        ApiKey,
        AuditEvent,
        Contradiction,
        InjectionEntry,
        ManagementToken,
        Memory,
        MemoryProvider,
        MemorySlot,
        PendingProviderWrite,
    )

    def stamp(value: datetime | None) -> str | None:
        return value.isoformat() if value else None

    memories = [
        {
            "uuid": str(m.uuid),
            "owner": m.owner.name,
            "content": m.content,
            "key": m.key,
            "metadata": m.metadata,
            "session": m.session_id,
            "created": stamp(m.created_at),
            "expires": stamp(m.expires_at),
            "importance": m.importance,
            "category": m.category,
            "entities": m.entities,
            "valid_to": stamp(m.valid_to),
            "superseded_by": str(m.superseded_by.uuid) if m.superseded_by else None,
        }
        for m in Memory.objects.select_related("owner", "superseded_by").order_by("uuid")
    ]
    return {
        "users": [
            [
                u.username,
                u.password,
                u.is_staff,
                sorted(g.name for g in u.groups.all()),
                sorted(p.codename for p in u.user_permissions.all()),
            ]
            for u in User.objects.order_by("username")
        ],
        "keys": [
            [
                str(k.pk),
                k.name,
                k.key_hash,
                k.allow_global_scope,
                k.provider.name if k.provider else None,
                [f.provider.name for f in k.fallback_links.all()],
            ]
            for k in ApiKey.objects.order_by("name")
        ],
        "tokens": [
            [t.name, t.token_hash, t.scope, sorted(o.name for o in t.owners.all())]
            for t in ManagementToken.objects.order_by("name")
        ],
        "providers": [[p.name, p.config] for p in MemoryProvider.objects.order_by("name")],
        "upstreams": [[u.name, u.api_key] for u in UpstreamProvider.objects.order_by("name")],
        "settings": [get_memory_settings().maxTokens, get_memory_settings().customApiKey],
        "memories": memories,
        "slots": sorted(
            [s.memory.uuid.hex, s.owner_id.hex, s.slot] for s in MemorySlot.objects.select_related("memory")
        ),
        "contradictions": sorted(
            [c.owner.name, c.old.content, c.new.content, c.verdict, c.status]
            for c in Contradiction.objects.select_related("owner", "old", "new")
        ),
        "audit": sorted([e.action, e.actor_kind, e.count] for e in AuditEvent.objects.all()),
        "ledger": [[e.api_key.name, e.system_message, e.query] for e in InjectionEntry.objects.all()],
        "pending": [[w.primary, json.loads(w.payload)] for w in PendingProviderWrite.objects.all()],
    }
