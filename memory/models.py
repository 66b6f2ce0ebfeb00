"""The memory domain's tables.

The integer primary key of ``Memory`` (``seq``) is the rowid that the FTS5
table (``memory_fts``, external content) and the sqlite-vec table
(``memory_vec``) use, so the three never need a mapping column (the
original's ``memory_id`` mirror was never filled on insert, so its FTS joins missed new rows).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from collections.abc import Iterable
from typing import Any, ClassVar, cast

from django.db import connection, models, transaction
from django.db.models import Q
from django.utils import timezone

from memory.crypto import EncryptedTextField
from memory.exceptions import ValidationFailed
from memory.rows import RowLoader


class MemoryType(models.TextChoices):
    FACTUAL = "factual"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"
    SEMANTIC = "semantic"
    SHORT_TERM = "short_term"
    LONG_TERM = "long_term"
    ENTITY = "entity"


def hash_secret(secret: str) -> str:
    """SHA-256 of a generated secret. The secrets carry 256 bits of entropy, so a
    fast hash is enough (there is nothing to brute-force) and lookups stay indexed."""
    return hashlib.sha256(secret.encode()).hexdigest()


# The health check's private owner (memory/services/health.py). A fixed id, so that every process hides
# the same row.
HEALTH_PROBE_ID = uuid.UUID(int=1)  # 00000000-0000-0000-0000-000000000001


class ApiKeyManager(models.Manager["ApiKey"]):
    """``ApiKey.objects``: the real keys, without the health check's probe owner.

    The probe is hidden here, once, so that no owner list, owner lookup
    (``Principal.resolve_owner``: a 404), count or admin page offers it.
    ``ApiKey.all_objects`` includes it; only the health check needs that.
    Related lookups (``memory.owner``) and cascades use Django's plain base
    manager, so the probe's own memories behave like any other.
    """

    def get_queryset(self) -> models.QuerySet[ApiKey]:
        return super().get_queryset().exclude(pk=HEALTH_PROBE_ID)


class MemoryProvider(models.Model):
    """A configured memory backend (``memory/backends/``) that API keys may keep their memories in.

    ``type`` is a registry type string (``native``, ``inmemory``, ``redis``, ``chromadb``, ``lancedb``,
    ``pinecone``, ``http``) and the configuration is that type's config object as JSON. The whole
    configuration is stored encrypted (it holds API keys, passwords in URLs, auth headers); reads mask
    its secrets (``memory.services.providers``). A provider in use by a key cannot be deleted.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=64, unique=True)
    type = models.CharField(max_length=16)
    config_json = EncryptedTextField(default="{}")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        verbose_name = "memory provider"

    def __str__(self) -> str:
        return f"{self.name} ({self.type})"

    @transaction.atomic
    def save(self, *args: Any, **kwargs: Any) -> None:
        # Atomic: a new row's ciphertext is bound to its id and written right after the insert.
        super().save(*args, **kwargs)

    @property
    def config(self) -> dict[str, Any]:
        value = json.loads(self.config_json or "{}")
        return value if isinstance(value, dict) else {}

    @config.setter
    def config(self, value: dict[str, Any]) -> None:
        self.config_json = json.dumps(value, sort_keys=True)


class ApiKey(models.Model):
    """A client key for the gateway; its ``id`` is the memory owner (``apiKeyId``).

    The secret (``sk-omr-…``) is shown once by :meth:`issue` and stored only as
    a hash. A revoked key authenticates nowhere; its memories stay until the
    key is deleted (which deletes them, FTS and vectors included).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=16, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    allow_global_scope = models.BooleanField(
        default=False, help_text="Allow this key's chats to retrieve every owner's memories."
    )
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # Where this key's memories live: None is the native store (this database's rows and indexes).
    provider = models.ForeignKey(
        MemoryProvider, null=True, blank=True, on_delete=models.PROTECT, related_name="primary_for"
    )
    fallbacks = models.ManyToManyField(
        MemoryProvider, through="ProviderFallback", blank=True, related_name="fallback_for"
    )
    # This key's own composite ranking (memory.retrieval.composite): the signal weights
    # (``{"semantic", "recency", "importance"}``) and the recency half-life in days; null follows the
    # settings' ``compositeWeights`` / ``recencyHalfLifeDays``.
    composite_weights = models.JSONField(null=True, blank=True)
    recency_half_life_days = models.FloatField(null=True, blank=True)

    # The first manager is the default one: it hides the health probe. ``all_objects`` includes it (for
    # memory/services/health.py alone); ruff's DJ012 takes a bare ``models.Manager()`` for a field.
    objects = ApiKeyManager()
    all_objects = models.Manager()  # noqa: DJ012

    class Meta:
        ordering = ["name", "created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @classmethod
    def issue(cls, *, name: str, **fields: Any) -> tuple[ApiKey, str]:
        """Create a key and return it with its secret, which is not stored."""
        secret = "sk-omr-" + secrets.token_urlsafe(32)
        key = cls.objects.create(name=name, prefix=secret[:12], key_hash=hash_secret(secret), **fields)
        return key, secret

    @classmethod
    def active_for_secret(cls, secret: str) -> ApiKey | None:
        """The unrevoked key whose secret is ``secret``, or ``None``.

        Every gateway request starts here, so the SQL is written once rather than
        compiled by the ORM per call (a quarter of a millisecond saved per request).
        """
        if cls._active_sql is None:
            cls._active_sql = (
                f"SELECT {API_KEY_ROWS.columns()} FROM {cls._meta.db_table} "
                "WHERE key_hash = %s AND revoked_at IS NULL LIMIT 1"
            )
        with connection.cursor() as cursor:
            cursor.execute(cls._active_sql, [hash_secret(secret)])
            row = cursor.fetchone()
        return None if row is None else API_KEY_ROWS.load(row)

    _active_sql: ClassVar[str | None] = None

    @classmethod
    def provider_of(cls, key_id: uuid.UUID) -> ApiKey | None:
        """The key ``key_id`` with its id and provider only (where its memories live), or ``None``.

        Every retrieval of one owner asks, so the SQL is written once rather than compiled by the ORM
        per call (half a millisecond per REST preview)."""
        if cls._provider_sql is None:
            provider = cls.provider.field.column
            cls._provider_sql = (
                f"SELECT {provider} FROM {cls._meta.db_table} WHERE {cls._meta.pk.column} = %s"
            )
        with connection.cursor() as cursor:
            cursor.execute(cls._provider_sql, [cls._meta.pk.get_db_prep_value(key_id, connection)])
            row = cursor.fetchone()
        if row is None:
            return None
        provider_id = None if row[0] is None else cls.provider.field.target_field.to_python(row[0])
        return cls.from_db(connection.alias, ["id", "provider_id"], [key_id, provider_id])

    _provider_sql: ClassVar[str | None] = None


API_KEY_ROWS: RowLoader[ApiKey] = RowLoader(ApiKey)


class ProviderFallback(models.Model):
    """One fallback of a key's provider, in order (``position`` 0 is tried first)."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="fallback_links")
    provider = models.ForeignKey(MemoryProvider, on_delete=models.PROTECT, related_name="fallback_links")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["api_key", "provider"], name="fallback_once_per_key"),
            models.UniqueConstraint(fields=["api_key", "position"], name="fallback_position_per_key"),
        ]

    def __str__(self) -> str:
        return f"{self.api_key_id} → {self.provider_id} (#{self.position})"


class TokenScope(models.TextChoices):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


SCOPE_RANK = {TokenScope.READ: 1, TokenScope.WRITE: 2, TokenScope.ADMIN: 3}


class ManagementToken(models.Model):
    """A bearer token for ``/api/*`` and the MCP tools.

    ``scope`` is cumulative (write ⊃ read, admin ⊃ write). A token bound to
    owners never reaches any other owner's memories, on any route. A token with
    no ``owners`` is global (every owner), which only ``admin`` tokens may be:
    :meth:`issue` refuses an unbound read or write token, and one
    left unbound (made before that rule, or whose keys were all deleted) is
    refused at request time, never widened to every owner.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=16, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(max_length=8, choices=TokenScope.choices, default=TokenScope.READ)
    owners = models.ManyToManyField(ApiKey, blank=True, related_name="management_tokens")
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name", "created_at"]

    def __str__(self) -> str:
        return f"{self.name} [{self.scope}] ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def has_scope(self, needed: str) -> bool:
        return SCOPE_RANK[TokenScope(self.scope)] >= SCOPE_RANK[TokenScope(needed)]

    @staticmethod
    def reach_problem(scope: str, *, bound: bool) -> str | None:
        """Why a ``scope`` token bound (or not) to API keys may not be used; ``None`` when it may."""
        if bound or scope == TokenScope.ADMIN:
            return None
        return f"A {scope} token must be bound to at least one API key: only admin tokens may reach every API key"

    @classmethod
    def with_owners_for_secret(cls, secret: str) -> tuple[ManagementToken, frozenset[uuid.UUID]] | None:
        """The token whose secret is ``secret`` (revoked or not) and the ids of the API keys it is bound to,
        in one precompiled query (every REST request starts here), or ``None``. The health probe's key is
        never an owner, as through ``owners``."""
        if cls._secret_sql is None:
            through = cls.owners.through._meta
            token_column = through.get_field("managementtoken").column
            key_column = through.get_field("apikey").column
            columns = TOKEN_ROWS.columns("t")
            joined = (
                f"group_concat(o.{key_column})"
                if connection.vendor == "sqlite"
                else f"string_agg(o.{key_column}::text, ',')"
            )
            cls._secret_sql = (
                f"SELECT {columns}, (SELECT {joined} FROM {through.db_table} AS o "
                f"WHERE o.{token_column} = t.id AND o.{key_column} != %s) AS owner_ids "
                f"FROM {cls._meta.db_table} AS t WHERE t.token_hash = %s LIMIT 1"
            )
        # SQLite stores a UUID as 32 hex digits; other databases take the UUID itself.
        probe: str | uuid.UUID = HEALTH_PROBE_ID.hex if connection.vendor == "sqlite" else HEALTH_PROBE_ID
        with connection.cursor() as cursor:
            cursor.execute(cls._secret_sql, [probe, hash_secret(secret)])
            row = cursor.fetchone()
        if row is None:
            return None
        raw = row[TOKEN_ROWS.width] or ""  # the owner ids, after the token's columns
        return TOKEN_ROWS.load(row), frozenset(uuid.UUID(value) for value in raw.split(",") if value)

    _secret_sql: ClassVar[str | None] = None

    @classmethod
    def issue(
        cls, *, name: str, scope: str = TokenScope.READ, owners: Iterable[ApiKey] = ()
    ) -> tuple[ManagementToken, str]:
        """Create a token and return it with its secret, which is not stored.

        Raises ``ValidationFailed`` (field ``owners``) for a read or write token without owners."""
        owners = list(owners)
        problem = cls.reach_problem(scope, bound=bool(owners))
        if problem:
            raise ValidationFailed(problem, field="owners")
        secret = "omt_" + secrets.token_urlsafe(32)
        token = cls.objects.create(name=name, scope=scope, prefix=secret[:10], token_hash=hash_secret(secret))
        if owners:
            token.owners.set(owners)
        return token, secret


TOKEN_ROWS: RowLoader[ManagementToken] = RowLoader(ManagementToken)


class Memory(models.Model):
    """One remembered fact of one owner.

    Contract: ``owner`` is always set. ``key`` is ``NULL`` or unique per owner
    (enforced by a partial unique constraint, so concurrent upserts cannot
    create duplicates). ``needs_reindex`` is true while the vector is missing or
    stale. Rows whose ``expires_at`` has passed are never returned by any read.
    """

    seq = models.BigAutoField(primary_key=True)
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    owner = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="memories")
    session_id = models.CharField(max_length=200, blank=True, default="")
    type = models.CharField(max_length=16, choices=MemoryType.choices, default=MemoryType.FACTUAL)
    key = models.CharField(max_length=255, null=True, blank=True)
    content = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    needs_reindex = models.BooleanField(default=True)
    access_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    importance = models.FloatField(default=0.5)
    # A conversation turn's previous turn (memory.services.turns): its content, indexed by FTS5 as
    # keyword context, and its seq; kept true by triggers (migration 0005).
    context = models.TextField(null=True, blank=True)
    context_seq = models.BigIntegerField(null=True, blank=True)
    # The cognitive analysis on write (memory.services.cognitive): a category, the entities named
    # (``[{"kind", "text", "normalised"}]``) and the validity of the value it states: ``valid_from``
    # null means since ``created_at``; ``valid_to`` null means still current; a memory superseded by a
    # later one keeps its row (history), with ``valid_to`` and ``superseded_by`` set.
    category = models.CharField(max_length=32, blank=True, default="")
    entities = models.JSONField(default=list, blank=True)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="superseded",
        # No database constraint: migration 0013 adds the column without a table rebuild (see there).
        db_constraint=False,
    )

    class Meta:
        db_table = "memories"
        ordering = ["-created_at", "-seq"]
        verbose_name_plural = "memories"
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "key"], condition=Q(key__isnull=False), name="memory_owner_key_uniq"
            ),
            models.CheckConstraint(
                condition=Q(importance__gte=0) & Q(importance__lte=1), name="memory_importance_0_1"
            ),
        ]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="memory_owner_created"),
            models.Index(fields=["owner", "session_id"], name="memory_owner_session"),
            models.Index(fields=["expires_at"], name="memory_expires"),
            models.Index(
                fields=["context_seq"], condition=Q(context_seq__isnull=False), name="memory_context_seq"
            ),
            models.Index(
                fields=["needs_reindex"], condition=Q(needs_reindex=True), name="memory_needs_reindex"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key or self.uuid}: {self.content[:60]}"

    @classmethod
    def by_seq(cls, seqs: Iterable[int]) -> dict[int, Memory]:
        """The memories whose seq is in ``seqs``, by seq, whole (no filter: the caller's ranking applied
        them) — the instances ``Memory.objects.in_bulk(seqs)`` gives.

        Every retrieval loads its hits this way, so the SELECT and each column's conversion (Django's
        own converters for this database) are worked out once per database vendor rather than
        compiled by the ORM per call (``memory.rows``): 20 hits load in about half the time of a raw
        queryset's (0.5 against 1.0 ms on the machines we measure)."""
        seqs = list(seqs)
        if not seqs:
            return {}
        table = connection.ops.quote_name(cls._meta.db_table)
        pk = connection.ops.quote_name(cast(str, cls._meta.pk.column))
        sql = f"SELECT {MEMORY_ROWS.columns()} FROM {table} WHERE {pk} IN ({', '.join(['%s'] * len(seqs))})"
        with connection.cursor() as cursor:
            cursor.execute(sql, seqs)
            rows = cursor.fetchall()
        found: dict[int, Memory] = {}
        for row in rows:
            memory = MEMORY_ROWS.load(row)
            found[memory.seq] = memory
        return found


MEMORY_ROWS: RowLoader[Memory] = RowLoader(Memory)


class VectorMeta(models.Model):
    """Singleton (id = 1) describing the live ``memory_vec`` table.

    ``embedding_signature`` is ``source:model:dim`` with ``:int8`` appended for
    an int8 table; a different signature means the table must be rebuilt and
    every memory re-embedded.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    active_dim = models.PositiveIntegerField(null=True, blank=True)
    embedding_signature = models.CharField(max_length=300, null=True, blank=True)
    last_reset_at = models.DateTimeField(null=True, blank=True)
    vec_loaded = models.BooleanField(default=False)

    class Meta:
        db_table = "memory_vec_meta"
        constraints = [models.CheckConstraint(condition=Q(id=1), name="memory_vec_meta_singleton")]

    def __str__(self) -> str:
        return self.embedding_signature or "no vector table"

    @classmethod
    def load(cls) -> VectorMeta:
        meta, _ = cls.objects.get_or_create(id=1)
        return meta


class Setting(models.Model):
    """A runtime setting stored in the database (JSON value), overriding the env default.

    One row per field, keyed by its group's prefix (``memory.``, ``qdrant.``); read and written only
    through a ``memory.conf.StoredSettings`` group (``get_memory_settings`` / ``update_memory_settings``,
    ``memory.qdrant_conf``), whose writes invalidate the cache.
    """

    key = models.CharField(max_length=100, primary_key=True)
    value = models.JSONField(null=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_settings"

    def __str__(self) -> str:
        return self.key


class AuditAction(models.TextChoices):
    MEMORY_DELETE = "memory.delete"
    MEMORY_CLEAR = "memory.clear"
    MEMORY_BULK_DELETE = "memory.bulk_delete"
    MEMORY_SUMMARIZE = "memory.summarize"
    MEMORY_COMPACT = "memory.compact"
    CREDENTIAL_REVOKE = "credential.revoke"
    CREDENTIAL_DELETE = "credential.delete"
    CREDENTIAL_CREATE = "credential.create"
    CREDENTIAL_UPDATE = "credential.update"
    PROVIDER_SAVE = "provider.save"
    PROVIDER_DELETE = "provider.delete"
    SETTINGS_CHANGE = "settings.change"
    CONTRADICTION_RESOLVE = "contradiction.resolve"
    MEMORY_CONSOLIDATE = "memory.consolidate"
    MEMORY_CONSOLIDATE_UNDO = "memory.consolidate_undo"


class AuditEvent(models.Model):
    """One destructive operation: who (``actor_*``, ``via``), when (``at``), what (``action``,
    ``details``), on which owner (``owner_id``) and how many rows (``count``).

    Written only by ``memory.services.audit.record``, inside the transaction of the change it
    records, so an event exists exactly when its change committed. ``owner_id`` is a plain UUID, not a
    foreign key: the record outlives the API key it names. An operation over several owners writes one
    event per owner; ``owner_id`` is null for a global one (settings). Pruned after
    ``MEMORY_AUDIT_RETENTION_DAYS`` by the nightly lifecycle task.
    """

    at = models.DateTimeField(default=timezone.now)
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    # token (management token), user (staff), api_key, command, system
    actor_kind = models.CharField(max_length=16)
    actor_id = models.CharField(max_length=64, blank=True)
    actor_name = models.CharField(max_length=200, blank=True)
    # rest, mcp, studio, admin, command, task
    via = models.CharField(max_length=16)
    owner_id = models.UUIDField(null=True, blank=True)
    count = models.PositiveIntegerField(default=0)
    details = models.JSONField(default=dict)

    class Meta:
        db_table = "memory_audit_events"
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["owner_id", "at"], name="audit_owner_at"),
            models.Index(fields=["action", "at"], name="audit_action_at"),
            models.Index(fields=["at"], name="audit_at"),
        ]

    def __str__(self) -> str:
        who = self.actor_name or self.actor_id
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} by {self.actor_kind}:{who}"


class PendingProviderWrite(models.Model):
    """A write to a key's provider that a fallback took while the provider was unavailable, waiting to
    be replayed to it (``memory.backends.durable.DatabaseQueue``, the managers' durable queue).

    ``owner`` is the API key id (a plain UUID: the row is the queue's, and outlives nothing: the replay
    task removes the rows of a deleted key). ``primary`` and ``fallback`` name the provider the write
    waits for and the one that holds the record. ``payload`` is the whole write (the draft, the
    changes, the vector) as JSON, stored encrypted: it is user data. Rows are replayed in ``id`` order;
    ``attempts`` and ``last_error`` say how the replays went. ``claimed_by`` and ``claimed_until`` are
    the lease of the replayer (one process at a time per key).
    """

    class Operation(models.TextChoices):
        STORE = "store"
        UPDATE = "update"
        DELETE = "delete"

    id = models.BigAutoField(primary_key=True)
    owner = models.UUIDField()
    primary = models.CharField(max_length=64)
    fallback = models.CharField(max_length=64)
    operation = models.CharField(max_length=8, choices=Operation.choices)
    memory_id = models.UUIDField()
    payload = EncryptedTextField(default="")
    created_at = models.DateTimeField(default=timezone.now)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    claimed_by = models.CharField(max_length=32, blank=True, default="")
    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_pending_provider_writes"
        ordering = ["id"]
        indexes = [models.Index(fields=["owner", "id"], name="pending_write_owner")]

    def __str__(self) -> str:
        return f"{self.operation} {self.memory_id} for {self.primary} (held by {self.fallback})"

    @transaction.atomic
    def save(self, *args: Any, **kwargs: Any) -> None:
        # Atomic: a new row's ciphertext is bound to its id and written right after the insert.
        super().save(*args, **kwargs)


class InjectionEntry(models.Model):
    """One gateway answer that carried memory: what was injected into the request and why (the
    injection ledger, ``memory.services.ledger``).

    ``id`` is the injection id the answer carried in ``x-omniroute-injection-id``. ``memories`` lists
    each injected memory in the order it was injected: ``{"id", "rank", "tier", "score", "signals",
    "tokens"}``, ids only, never their text, so a memory deleted later is not kept alive here; the text
    that was sent is in ``system_message``, encrypted at rest like every stored secret. ``extraction``
    is null until the exchange's extraction ran (``{"ran", "learned", "error"}``). Written off the
    request path, pruned after ``MEMORY_LEDGER_RETENTION_DAYS`` by the nightly lifecycle task; a
    key's entries go with the key.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="injections")
    session_id = models.CharField(max_length=200, blank=True, default="")
    model = models.CharField(max_length=200)
    strategy = models.CharField(max_length=16)
    tiers = models.JSONField(default=list)
    memories = models.JSONField(default=list)
    total_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    system_message = EncryptedTextField(default="")
    # The text retrieval ranked for (the user's last message), encrypted too: a replay runs it again.
    query = EncryptedTextField(default="", blank=True)
    extraction = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        db_table = "memory_injections"
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["api_key", "at"], name="injection_key_at")]
        verbose_name = "injection ledger entry"
        verbose_name_plural = "injection ledger entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.model}: {len(self.memories)} memories"


class MemorySlot(models.Model):
    """One claim slot a memory states ("residence", "preference:cat", "kind:editor", ``w~<word>`` for a
    value's word), written on every native write by :mod:`memory.services.cognitive`: the index that
    finds, in one query, the owner's memories a new one may supersede or contradict (a JSON list on
    the row could not be indexed). The rows of a memory are replaced when its content changes and go
    with it (a trigger of migration 0013)."""

    owner = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="+")
    # Deleted with the memory by a trigger (migration 0013), not by Django's collector: a memory's
    # deletion counts memories only (the API's deletedCount, the audit).
    memory = models.ForeignKey(Memory, on_delete=models.DO_NOTHING, related_name="slots")
    slot = models.CharField(max_length=200)

    class Meta:
        db_table = "memory_slots"
        indexes = [models.Index(fields=["owner", "slot"], name="memory_slot_owner_slot")]

    def __str__(self) -> str:
        return f"{self.memory_id}: {self.slot}"


class ContradictionStatus(models.TextChoices):
    OPEN = "open"
    RESOLVED = "resolved"


class ContradictionResolution(models.TextChoices):
    KEEP_OLD = "keep_old"
    KEEP_NEW = "keep_new"
    KEEP_BOTH = "keep_both"
    MERGE = "merge"
    AUTO = "auto"
    # Settled by a consolidation (memory.services.consolidation): both sides became one memory, or
    # one side was no longer current.
    CONSOLIDATED = "consolidated"


class Contradiction(models.Model):
    """A new memory that conflicts with one of its owner's current memories, found on write.

    ``verdict`` is the check's (``supersedes``, ``contradicts``, ``ambiguous``), ``subject`` the slot
    they share, ``reason`` one sentence for the reviewer and ``confidence`` the rules' score (0..1). A ``supersedes`` verdict is applied at
    once (the old memory gets ``valid_to`` and ``superseded_by``) and recorded ``resolved``/``auto``;
    the others are ``open`` until someone resolves them (``keep_old``, ``keep_new``, ``keep_both``,
    ``merge``). Both memories stay while it is open. Contract: ``old`` and ``new`` belong to ``owner``.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="contradictions")
    # Deleted with either memory by a trigger (migration 0013), like MemorySlot.memory.
    old = models.ForeignKey(Memory, on_delete=models.DO_NOTHING, related_name="+")
    new = models.ForeignKey(Memory, on_delete=models.DO_NOTHING, related_name="+")
    verdict = models.CharField(max_length=16)
    subject = models.CharField(max_length=200, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    # The rules' confidence (0..1) that the two conflict (memory.cognitive.contradiction.CONFIDENCE);
    # null for a contradiction recorded before it was computed (migration 0018).
    confidence = models.FloatField(null=True, blank=True)
    status = models.CharField(
        max_length=8, choices=ContradictionStatus.choices, default=ContradictionStatus.OPEN
    )
    resolution = models.CharField(
        max_length=16, choices=ContradictionResolution.choices, blank=True, default=""
    )
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_contradictions"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "status", "-created_at"], name="contradiction_owner_status")]

    def __str__(self) -> str:
        return f"{self.verdict} {self.subject}: {self.old_id} -> {self.new_id} ({self.status})"


class ConsolidationStatus(models.TextChoices):
    APPLIED = "applied"
    UNDONE = "undone"


class ConsolidationRun(models.Model):
    """One consolidation of one owner's memories (:mod:`memory.services.consolidation`): the groups of
    near-duplicates it merged, each a :class:`ConsolidationMerge`, and what it did to the
    contradictions (``contradictions``: each changed row's state before, for the undo).

    Only a run that merged something is stored (a dry run writes nothing). ``undo`` puts every row
    back as it was; a run is undone at most once (``status``). Goes with its key.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="consolidation_runs")
    created_at = models.DateTimeField(default=timezone.now)
    actor = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(
        max_length=8, choices=ConsolidationStatus.choices, default=ConsolidationStatus.APPLIED
    )
    undone_at = models.DateTimeField(null=True, blank=True)
    groups = models.PositiveIntegerField(default=0)
    merged = models.PositiveIntegerField(default=0)
    resolved = models.PositiveIntegerField(default=0)
    contradictions = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "memory_consolidation_runs"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="consolidation_owner_at")]

    def __str__(self) -> str:
        return f"{self.owner_id} {self.created_at:%Y-%m-%d %H:%M}: {self.merged} merged ({self.status})"


class ConsolidationMerge(models.Model):
    """One group of a :class:`ConsolidationRun`: the memories merged into ``survivor`` (a ``seq``; a
    plain number, not a foreign key: the record must not change when the survivor does).

    ``survivor_before`` is the survivor's row before the merge and ``removed`` each merged-away row,
    both in Django's serialisation (every column, ``seq`` and ``uuid`` included), with, for a removed
    row, its vector (``vector``: base64 float32, with the store's ``signature``), its slot index rows,
    the turns whose context it was and the memories it superseded: everything an undo needs to put
    the rows back exactly. ``survivor_written_at`` is the survivor's ``updated_at`` after the merge:
    an undo refuses to overwrite a survivor edited since.
    """

    run = models.ForeignKey(ConsolidationRun, on_delete=models.CASCADE, related_name="merges")
    survivor = models.BigIntegerField()
    survivor_uuid = models.UUIDField()
    survivor_before = models.JSONField()
    survivor_written_at = models.DateTimeField()
    removed = models.JSONField(default=list)
    reasons = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "memory_consolidation_merges"
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{len(self.removed)} into {self.survivor_uuid}"
