"""Memory providers and the API keys that use them: saving, deleting, probing and showing providers;
creating, changing and deleting keys with their provider and fallbacks.

Rules kept here, whatever the interface (REST, Studio, admin):

- a provider's name is 1-64 characters of ``[a-z0-9][a-z0-9_-]*`` and unique (``name``); its type
  and configuration must parse (:func:`memory.backends.registry.parse_config`, a ``BackendConfigError``
  naming ``type`` or ``config.<field>``); the configuration is stored whole, in the encrypted column;
- every save bumps ``updated_at``, which is how :mod:`memory.backends.selection` knows to rebuild the
  backends and managers built from the old configuration;
- reads never show a secret (:mod:`memory.services.provider_masking`): ``api_key``-like fields,
  every header value and the password (and secret query parameters) of a URL become ``MASK``.
  Saving a configuration that still holds ``MASK`` where a secret was keeps the stored secret, so a
  client can send back what it read;
- the type of a provider that keys use cannot change (their memories would be left in the old store);
  a provider that keys use (as primary or fallback) cannot be deleted (409);
- a key's provider changes only while the key has no memories in its current store (409: moving them
  is ``manage.py move_memories``); a key without a provider (the native store) has no fallbacks;
- deleting a provider-backed key clears its memories on its provider (and the fallbacks) first: a key
  takes its memories with it wherever they live.

Every change is written to the audit log in the transaction of the change.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory import store
from memory.backends.base import BackendConfigError, BackendUnavailable, Health
from memory.backends.durable import pending_summary
from memory.backends.registry import parse_config
from memory.backends.selection import manager_for, managers, provider_backend
from memory.conf import HALF_LIFE_DAYS, composite_weights_problem
from memory.crypto import SecretUnreadable
from memory.exceptions import Conflict, NotFound, ValidationFailed
from memory.models import ApiKey, AuditAction, MemoryProvider, PendingProviderWrite, ProviderFallback
from memory.retrieval.composite import SIGNALS
from memory.services import audit
from memory.services.credentials import credential_delete, credential_revoke

# MASK is re-exported: the Studio and the tests compare shown configurations with it.
from memory.services.provider_masking import MASK, mask_config, unmask_config  # noqa: F401
from memory.shapes import iso

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# The most fallbacks a key may have (each failing operation tries them in order).
MAX_FALLBACKS = 5

_UNSET: Any = object()


# -- providers


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ValidationFailed(
            "name must be 1-64 characters: lowercase letters, digits, '_' and '-', starting with a letter or digit",
            field="name",
        )
    return name


def _in_use(provider: MemoryProvider) -> bool:
    return (
        ApiKey.all_objects.filter(provider=provider).exists()
        or ProviderFallback.objects.filter(provider=provider).exists()
    )


def provider_validate(
    *, name: str, type: str, config: Mapping[str, Any] | None, existing: MemoryProvider | None = None
) -> dict[str, Any]:
    """The configuration :func:`provider_save` would store (masked secrets put back), or the error it
    would raise; for forms that report errors before saving (the admin)."""
    name = _check_name(name)
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise BackendConfigError("config must be an object", field="config")
    taken = MemoryProvider.objects.filter(name=name)
    if existing is not None:
        taken = taken.exclude(pk=existing.pk)
    if taken.exists():
        raise Conflict(f"a provider named {name!r} exists already", field="name")
    restored = unmask_config(config, existing.config if existing is not None else {})
    parse_config(type, restored)  # BackendConfigError naming type or config.<field>
    if existing is not None and existing.type != type and _in_use(existing):
        raise Conflict(
            f"provider {existing.name!r} is used by API keys: its type cannot change "
            "(move their memories to another provider first)",
            field="type",
        )
    return restored


@transaction.atomic
def provider_save(
    *,
    name: str,
    type: str,
    config: Mapping[str, Any] | None,
    actor: audit.Actor,
    existing: MemoryProvider | None = None,
) -> MemoryProvider:
    """Create a provider, or change ``existing`` (its name too); see the module docstring for the rules.

    Raises ``ValidationFailed`` (``name``, ``config.<field>``), ``BackendConfigError`` (``type``,
    ``config.<field>``) and ``Conflict`` (``name`` taken; ``type`` of a provider in use)."""
    stored = existing.config if existing is not None else {}
    config = provider_validate(name=name, type=type, config=config, existing=existing)
    now = timezone.now()
    provider = existing if existing is not None else MemoryProvider(created_at=now)
    before = {"name": provider.name, "type": provider.type} if existing is not None else None
    changed = sorted(
        field for field in set(config) | set(stored) if config.get(field, _UNSET) != stored.get(field, _UNSET)
    )
    provider.name = name
    provider.type = type
    provider.config = dict(config)
    provider.updated_at = now  # selection rebuilds the backends of a provider whose stamp changed
    provider.save()
    audit.record(
        actor=actor,
        action=AuditAction.PROVIDER_SAVE,
        count=1,
        details={
            "id": str(provider.pk),
            "name": provider.name,
            "type": provider.type,
            "created": existing is None,
            "before": before,
            "configFieldsChanged": changed,  # names only: values may be secrets
        },
    )
    return provider


@transaction.atomic
def provider_delete(provider: MemoryProvider, *, actor: audit.Actor) -> None:
    """Delete ``provider``; ``Conflict`` (field ``name``) while an API key uses it as its provider or a
    fallback. The memories it holds stay in its store (it is not reached any more)."""
    users = sorted(
        {k.name for k in ApiKey.all_objects.filter(provider=provider)}
        | {
            link.api_key.name
            for link in ProviderFallback.objects.filter(provider=provider).select_related("api_key")
        }
    )
    if users:
        raise Conflict(
            f"provider {provider.name!r} is used by API keys ({', '.join(users)}): "
            "choose another provider for them first",
            field="name",
        )
    audit.record(
        actor=actor,
        action=AuditAction.PROVIDER_DELETE,
        count=1,
        details={"id": str(provider.pk), "name": provider.name, "type": provider.type},
    )
    provider.delete()


def provider_get(name: str, *, owner_ids: frozenset[uuid.UUID] | None = None) -> MemoryProvider:
    """The provider named ``name``; a caller bound to ``owner_ids`` reaches only the providers its keys
    use. ``NotFound`` (field ``name``) otherwise, the same for unknown and unreachable."""
    provider = visible_providers(owner_ids).filter(name=name).first() if isinstance(name, str) else None
    if provider is None:
        raise NotFound(f"memory provider {name!r} not found", field="name")
    return provider


def visible_providers(owner_ids: frozenset[uuid.UUID] | None) -> Any:
    """Every provider for a global caller (``owner_ids`` None); for a bound one, those its keys use as
    provider or fallback."""
    qs = MemoryProvider.objects.all()
    if owner_ids is not None:
        ids = list(owner_ids)
        used = set(
            ApiKey.all_objects.filter(pk__in=ids, provider__isnull=False).values_list(
                "provider_id", flat=True
            )
        )
        used |= set(ProviderFallback.objects.filter(api_key_id__in=ids).values_list("provider_id", flat=True))
        qs = qs.filter(pk__in=used)
    return qs.order_by("name")


def provider_health(provider: MemoryProvider) -> Health:
    """Probe the provider's store. A configuration that no longer parses or opens (another master key)
    is an unhealthy answer saying why, not an error: the probe is how an operator finds out."""
    try:
        backend = provider_backend(provider)
    except BackendConfigError as exc:
        return Health(ok=False, latency_ms=0.0, error=f"configuration: {exc.message}")
    except SecretUnreadable as exc:
        return Health(ok=False, latency_ms=0.0, error=f"configuration: {exc}")
    return backend.health()


def health_json(health: Health) -> dict[str, Any]:
    return {
        "ok": health.ok,
        "latencyMs": round(health.latency_ms, 2),
        "error": health.error,
        "detail": health.detail,
    }


def provider_json(
    provider: MemoryProvider, *, health: bool = False, owner_ids: frozenset[uuid.UUID] | None = None
) -> dict[str, Any]:
    """A provider as the API and the Studio show it: secrets masked, ``health`` probed only when asked
    (null otherwise), ``usedBy`` the keys using it (for a caller bound to ``owner_ids``, its own only).
    ``configError`` says why a stored configuration no longer parses or opens (then ``capabilities``
    and ``config`` are null)."""
    config: dict[str, Any] | None
    capabilities: dict[str, bool] | None = None
    config_error: str | None = None
    try:
        config = mask_config(provider.config)
        capabilities = provider_backend(provider).capabilities.as_dict()
    except SecretUnreadable as exc:
        config, config_error = None, str(exc)
    except BackendConfigError as exc:
        config_error = exc.message
    used_by: list[dict[str, str]] = []
    primaries = ApiKey.objects.filter(provider=provider)
    fallbacks = ProviderFallback.objects.filter(provider=provider).select_related("api_key")
    if owner_ids is not None:
        primaries = primaries.filter(pk__in=list(owner_ids))
        fallbacks = fallbacks.filter(api_key_id__in=list(owner_ids))
    used_by += [{"id": str(k.pk), "name": k.name, "role": "primary"} for k in primaries]
    used_by += [
        {"id": str(link.api_key_id), "name": link.api_key.name, "role": "fallback"} for link in fallbacks
    ]
    return {
        "id": str(provider.pk),
        "name": provider.name,
        "type": provider.type,
        "capabilities": capabilities,
        "health": health_json(provider_health(provider)) if health else None,
        "config": config,
        "configError": config_error,
        "usedBy": used_by,
        "createdAt": iso(provider.created_at),
        "updatedAt": iso(provider.updated_at),
    }


def providers_status(owner_ids: frozenset[uuid.UUID] | None) -> dict[str, Any]:
    """The engine status's ``providers`` part: each provider the caller reaches with its health, and
    the recent fallback events of the managers of the keys it reaches, newest first."""
    providers = [
        {"name": p.name, "type": p.type, "health": health_json(provider_health(p))}
        for p in visible_providers(owner_ids)
    ]
    events = []
    for key, manager in managers():
        if owner_ids is not None and key.pk not in owner_ids:
            continue
        events += [{"apiKeyId": str(key.pk), **event.as_dict()} for event in manager.recent_events()]
    events.sort(key=lambda e: e["at"] or "", reverse=True)
    queue = pending_summary() if owner_ids is None else None
    return {"providers": providers, "fallbackEvents": events[:100], "replayQueue": queue}


# -- API keys


def _provider_named(name: object, *, field: str) -> MemoryProvider:
    provider = MemoryProvider.objects.filter(name=name).first() if isinstance(name, str) else None
    if provider is None:
        raise ValidationFailed(f"no memory provider is named {name!r}", field=field)
    return provider


def _fallback_names(api_key: ApiKey) -> list[str]:
    return list(
        ProviderFallback.objects.filter(api_key=api_key)
        .order_by("position")
        .values_list("provider__name", flat=True)
    )


def key_selection_check(
    api_key: ApiKey | None, *, provider: str | None, fallbacks: Sequence[str]
) -> tuple[MemoryProvider | None, list[MemoryProvider]]:
    """The providers :func:`key_set_provider` would give ``api_key`` (None: a key not created yet), or
    the error it would raise; for forms that report errors before saving (the admin)."""
    primary = _provider_named(provider, field="provider") if provider is not None else None
    fallbacks = list(fallbacks)
    if primary is None and fallbacks:
        raise ValidationFailed(
            "fallbacks need a provider: a key on the native store is served by this database alone",
            field="fallbacks",
        )
    if len(fallbacks) > MAX_FALLBACKS:
        raise ValidationFailed(f"at most {MAX_FALLBACKS} fallbacks", field="fallbacks")
    chosen: list[MemoryProvider] = []
    for index, name in enumerate(fallbacks):
        fallback = _provider_named(name, field=f"fallbacks[{index}]")
        if primary is not None and fallback.pk == primary.pk:
            raise ValidationFailed("a fallback cannot be the key's provider", field=f"fallbacks[{index}]")
        if any(f.pk == fallback.pk for f in chosen):
            raise ValidationFailed(f"{name!r} is listed twice", field=f"fallbacks[{index}]")
        chosen.append(fallback)
    if api_key is not None:
        queued = PendingProviderWrite.objects.filter(owner=api_key.pk)
        dropped = queued.exclude(fallback__in=[f.name for f in chosen])
        if primary is not None and api_key.provider_id == primary.pk:
            queued = dropped  # the same primary: only a fallback that still holds writes matters
        if queued.exists():
            raise Conflict(
                f"API key {api_key.name!r} has writes kept by a fallback and not yet replayed to its "
                "provider: wait for the replay (engine-status shows them) before changing its providers",
                field="fallbacks"
                if primary is not None and api_key.provider_id == primary.pk
                else "provider",
            )
    if api_key is not None and (primary.pk if primary else None) != api_key.provider_id:
        held = store.memory_count(api_key)
        if held:
            raise Conflict(
                f"API key {api_key.name!r} has {held} memories in its current store: move them with "
                "`manage.py move_memories` (or clear them) before changing its provider",
                field="provider",
            )
    return primary, chosen


@transaction.atomic
def key_set_provider(
    api_key: ApiKey, *, provider: str | None, fallbacks: Sequence[str], actor: audit.Actor
) -> ApiKey:
    """Make ``provider`` (a name; None: the native store) hold ``api_key``'s memories, with
    ``fallbacks`` (names) tried in order. ``ValidationFailed`` for an unknown name, a repeated one or
    fallbacks without a provider; ``Conflict`` (field ``provider``) while the key has memories in its
    current store; ``BackendUnavailable`` when that store cannot say whether it has any."""
    primary, chosen = key_selection_check(api_key, provider=provider, fallbacks=fallbacks)
    before = {
        "provider": api_key.provider.name if api_key.provider is not None else None,
        "fallbacks": _fallback_names(api_key),
    }
    api_key.provider = primary
    api_key.save(update_fields=["provider"])
    ProviderFallback.objects.filter(api_key=api_key).delete()
    ProviderFallback.objects.bulk_create(
        ProviderFallback(api_key=api_key, provider=f, position=i) for i, f in enumerate(chosen)
    )
    after = {"provider": primary.name if primary else None, "fallbacks": [f.name for f in chosen]}
    if after != before:
        audit.record(
            actor=actor,
            action=AuditAction.CREDENTIAL_UPDATE,
            owner_id=api_key.pk,
            count=1,
            details={**_key_details(api_key), "changes": _diff(before, after)},
        )
    return api_key


def _check_key_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationFailed("name must be a non-blank string", field="name")
    if len(name) > 200:
        raise ValidationFailed("name must be at most 200 characters", field="name")
    return name.strip()


@transaction.atomic
def key_create(
    *,
    name: str,
    allow_global_scope: bool = False,
    provider: str | None = None,
    fallbacks: Iterable[str] = (),
    actor: audit.Actor,
) -> tuple[ApiKey, str]:
    """Create an API key on ``provider`` (None: the native store) with ``fallbacks``; returns it with
    its secret, which is not stored and cannot be shown again."""
    key, secret = ApiKey.issue(name=_check_key_name(name), allow_global_scope=bool(allow_global_scope))
    audit.record(
        actor=actor,
        action=AuditAction.CREDENTIAL_CREATE,
        owner_id=key.pk,
        count=1,
        details={**_key_details(key), "allowGlobalScope": key.allow_global_scope, "provider": provider},
    )
    if provider is not None or list(fallbacks):
        key_set_provider(key, provider=provider, fallbacks=list(fallbacks), actor=actor)
    return key, secret


@transaction.atomic
def key_update(
    api_key: ApiKey,
    *,
    name: str = _UNSET,
    allow_global_scope: bool = _UNSET,
    revoked: bool = _UNSET,
    provider: str | None = _UNSET,
    fallbacks: Sequence[str] = _UNSET,
    composite_weights: Mapping[str, float] | None = _UNSET,
    recency_half_life_days: float | None = _UNSET,
    actor: audit.Actor,
) -> ApiKey:
    """Rename the key, change whether it may use the global scope, its own composite weights and
    recency half-life (None: the settings'; ``memory.retrieval.composite``), revoke it (through
    ``credential_revoke``) or change its provider and fallbacks (:func:`key_set_provider`), all or
    nothing. Fallbacks left out are kept, unless the provider becomes None (the native store has
    none). A revoked key stays revoked (``revoked=False`` on one is refused: its secret may have
    leaked; issue a new key)."""
    if revoked is False and api_key.revoked_at is not None:
        raise ValidationFailed("a revoked key cannot be restored: create a new key", field="revoked")
    before = _tunable(api_key)
    if name is not _UNSET:
        api_key.name = _check_key_name(name)
    if allow_global_scope is not _UNSET:
        api_key.allow_global_scope = bool(allow_global_scope)
    if composite_weights is not _UNSET:
        api_key.composite_weights = _checked_weights(composite_weights)
    if recency_half_life_days is not _UNSET:
        api_key.recency_half_life_days = _checked_half_life(recency_half_life_days)
    after = _tunable(api_key)
    if after != before:
        api_key.save(
            update_fields=["name", "allow_global_scope", "composite_weights", "recency_half_life_days"]
        )
        audit.record(
            actor=actor,
            action=AuditAction.CREDENTIAL_UPDATE,
            owner_id=api_key.pk,
            count=1,
            details={**_key_details(api_key), "changes": _diff(before, after)},
        )
    if provider is not _UNSET or fallbacks is not _UNSET:
        if provider is _UNSET:
            provider = api_key.provider.name if api_key.provider is not None else None
        if fallbacks is _UNSET:
            fallbacks = _fallback_names(api_key) if provider is not None else []
        key_set_provider(api_key, provider=provider, fallbacks=fallbacks, actor=actor)
    if revoked is True:
        credential_revoke(api_key, actor=actor)
    return api_key


@transaction.atomic
def key_delete(api_key: ApiKey, *, actor: audit.Actor) -> int:
    """Delete the key and its memories, wherever they live; returns how many memories went.

    A provider-backed key's memories are cleared on its provider (mirrored on the fallbacks) first,
    audited as a ``memory.clear``; when the provider cannot be reached the key is not deleted
    (``BackendUnavailable``, a 503), so no memory is left behind unreachable."""
    cleared = 0
    if api_key.provider_id is not None:
        manager = manager_for(api_key)
        if manager is not None:
            cleared = manager.clear(api_key.pk)
            audit.record(
                actor=actor,
                action=AuditAction.MEMORY_CLEAR,
                owner_id=api_key.pk,
                count=cleared,
                details={
                    "reason": "api key deleted",
                    "provider": api_key.provider.name if api_key.provider is not None else None,
                },
            )
    return cleared + credential_delete(api_key, actor=actor)


def key_get(key_id: str | uuid.UUID) -> ApiKey:
    """The key ``key_id`` (``NotFound``, field ``id``, for an unknown or malformed id)."""
    try:
        wanted = key_id if isinstance(key_id, uuid.UUID) else uuid.UUID(str(key_id))
    except ValueError:
        raise NotFound(f"API key {key_id} not found", field="id") from None
    key = ApiKey.objects.filter(pk=wanted).select_related("provider").first()
    if key is None:
        raise NotFound(f"API key {key_id} not found", field="id")
    return key


def _tunable(api_key: ApiKey) -> dict[str, Any]:
    return {
        "name": api_key.name,
        "allowGlobalScope": api_key.allow_global_scope,
        "compositeWeights": api_key.composite_weights,
        "recencyHalfLifeDays": api_key.recency_half_life_days,
    }


def _checked_weights(weights: Mapping[str, float] | None) -> dict[str, float] | None:
    if weights is None:
        return None
    problem = composite_weights_problem(dict(weights))
    if problem is not None:
        raise ValidationFailed(problem, field="compositeWeights")
    return {name: float(weights[name]) for name in SIGNALS}


def _checked_half_life(days: float | None) -> float | None:
    low, high = HALF_LIFE_DAYS
    if days is not None and not low <= days <= high:
        raise ValidationFailed(f"Must be from {low:.4f} to {high:g} days.", field="recencyHalfLifeDays")
    return None if days is None else float(days)


def key_json(api_key: ApiKey) -> dict[str, Any]:
    """A key as the API and the Studio show it (never its secret nor its hash). ``memoryCount`` is
    null when the key's store cannot be reached."""
    try:
        count: int | None = store.memory_count(api_key)
    except BackendUnavailable:
        count = None
    return {
        "id": str(api_key.pk),
        "name": api_key.name,
        "prefix": api_key.prefix,
        "allowGlobalScope": api_key.allow_global_scope,
        "createdAt": iso(api_key.created_at),
        "revokedAt": iso(api_key.revoked_at),
        "lastUsedAt": iso(api_key.last_used_at),
        "provider": api_key.provider.name if api_key.provider is not None else None,
        "fallbacks": _fallback_names(api_key) if api_key.provider_id else [],
        "memoryCount": count,
        "compositeWeights": api_key.composite_weights,
        "recencyHalfLifeDays": api_key.recency_half_life_days,
    }


def _key_details(api_key: ApiKey) -> dict[str, Any]:
    return {"credential": "api_key", "id": str(api_key.pk), "name": api_key.name, "prefix": api_key.prefix}


def _diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: {"from": before[k], "to": after[k]} for k in after if before.get(k) != after[k]}
