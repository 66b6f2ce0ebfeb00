"""What each route answers, for the OpenAPI schema (and so for generated clients).

These serializers only document: the views build their answers with the
domain's functions (``memory.shapes.memory_json``, the services'
``as_dict()``), and ``tests/memory/api/test_schema.py`` checks real answers
against the schema. A field that an answer carries only sometimes is
``required=False``; a field that may be null is ``allow_null=True``.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from memory.api.serializers import MemorySettingsSerializer
from memory.models import MemoryType
from memory.qdrant_conf import QUANTIZATIONS

# -- the error envelope (memory.api.errors) -------------------------------------------------------------


class ErrorDetailSerializer(serializers.Serializer):
    field = serializers.CharField(allow_blank=True, help_text="The field at fault ('' for the body).")
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    message = serializers.CharField()
    type = serializers.CharField(
        help_text="e.g. invalid_request_error, authentication_error, not_found_error"
    )
    details = ErrorDetailSerializer(many=True)


class ErrorEnvelopeSerializer(serializers.Serializer):
    error = ErrorSerializer()


ERROR_DESCRIPTIONS = {
    400: "Invalid request: ``details`` names each field at fault.",
    401: "No credentials, or an unknown, expired or revoked token.",
    403: "The token lacks the scope, or this route needs a global caller.",
    404: "Not found (an API key or memory the caller cannot reach looks the same).",
    409: "A conflict: another memory of this API key uses the key; a provider name is taken or the "
    "provider is in use; an API key's provider changes while it holds memories.",
    413: "The body is larger than OMNIROUTE_MAX_BODY_BYTES.",
    429: "Too many failed authentications from this address or with this token: retry after Retry-After.",
    503: "The database stayed locked by other writes past this request's deadline, or the API key's "
    "memory provider (and every fallback) cannot be reached: retry after Retry-After.",
}


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """The error envelope for each of ``codes``, and for 401 and 403 (every route is authenticated)."""
    return {
        code: OpenApiResponse(ErrorEnvelopeSerializer, description=ERROR_DESCRIPTIONS[code])
        for code in sorted({401, 403, *codes})
    }


# -- memories -----------------------------------------------------------------------------------------


class EntitySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["person", "place", "organisation", "date", "tool"])
    text = serializers.CharField(help_text="As written in the content.")
    normalised = serializers.CharField(help_text="Lower case, accents removed: what ?entity= compares.")


class MemorySerializer(serializers.Serializer):
    """A memory as every interface shows it (``memory.shapes.memory_json``)."""

    id = serializers.UUIDField()
    apiKeyId = serializers.UUIDField(help_text="The API key that owns the memory.")
    sessionId = serializers.CharField(allow_blank=True)
    type = serializers.ChoiceField(choices=MemoryType.choices)
    key = serializers.CharField(allow_blank=True, help_text="'' for a keyless memory.")
    content = serializers.CharField()
    metadata = serializers.DictField(help_text="Free-form JSON object.")
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    expiresAt = serializers.DateTimeField(allow_null=True)
    accessCount = serializers.IntegerField()
    lastAccessedAt = serializers.DateTimeField(allow_null=True)
    importance = serializers.FloatField(
        help_text="0..1: given by the writer, else computed on write from the content, type and source."
    )
    needsReindex = serializers.BooleanField(help_text="Its vector is missing or out of date.")
    category = serializers.CharField(
        allow_blank=True, help_text="What it is about (residence, preference, job, note ...), found on write."
    )
    entities = EntitySerializer(
        many=True, help_text="The people, places, organisations, dates and tools it names."
    )
    supersededBy = serializers.UUIDField(
        allow_null=True, help_text="The later memory that replaced this value; null while it is current."
    )
    validFrom = serializers.DateTimeField(help_text="Since when its value holds (its creation).")
    validTo = serializers.DateTimeField(
        allow_null=True, help_text="When a later memory superseded it; null: still current."
    )


class CacheCountsSerializer(serializers.Serializer):
    hits = serializers.IntegerField()
    misses = serializers.IntegerField()


class MemoryListStatsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    byType = serializers.DictField(child=serializers.IntegerField(), help_text="Memories per type.")
    tokensUsed = serializers.IntegerField(help_text="Over the API key filter only (not type, session or q).")
    hitRate = serializers.FloatField(help_text="The embedding cache's hit rate.")
    cacheStats = CacheCountsSerializer()


class MemoryListResponseSerializer(serializers.Serializer):
    # DRF's metaclass takes declared fields off the class, so these names (the JSON keys) shadow nothing
    # at run time; the stubs do not model that and see Serializer.data, Field.label and Field.source.
    data = MemorySerializer(many=True)  # type: ignore[assignment]
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    totalPages = serializers.IntegerField()
    stats = MemoryListStatsSerializer()


class MemoryCreatedSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    id = serializers.UUIDField()
    created = serializers.BooleanField(help_text="False when the key existed and the memory was updated.")
    memory = MemorySerializer()


class MemoryBulkResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    ids = serializers.ListField(child=serializers.UUIDField(), help_text="In input order.")


class MemoryReplySerializer(serializers.Serializer):
    memory = MemorySerializer()


class MemoryUpdatedSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    memory = MemorySerializer()


class SuccessSerializer(serializers.Serializer):
    success = serializers.BooleanField()


class SummarizedOwnerSerializer(serializers.Serializer):
    apiKeyId = serializers.UUIDField()
    candidates = serializers.IntegerField()
    totalTokens = serializers.IntegerField()
    deletedCount = serializers.IntegerField()
    summaryId = serializers.UUIDField(allow_null=True)


class SummarizeResultSerializer(serializers.Serializer):
    candidates = MemorySerializer(many=True)
    totalTokens = serializers.IntegerField()
    deletedCount = serializers.IntegerField()
    summaryId = serializers.UUIDField(allow_null=True, help_text="Set when exactly one summary was made.")
    summaryIds = serializers.ListField(child=serializers.UUIDField())
    dryRun = serializers.BooleanField()
    owners = SummarizedOwnerSerializer(many=True, help_text="One entry per API key that had candidates.")


# -- settings -----------------------------------------------------------------------------------------


class MemorySettingsResponseSerializer(MemorySettingsSerializer):
    """Every memory setting, as ``PUT`` takes them (``customApiKey`` masked). Derived from the input
    serializer so that the two cannot drift; an answer always carries every field."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        for field in fields.values():
            field.required = True
        return fields


class QdrantSettingsResponseSerializer(serializers.Serializer):
    """The Qdrant settings; the API key itself is never returned."""

    enabled = serializers.BooleanField()
    host = serializers.CharField(allow_blank=True)
    port = serializers.IntegerField()
    collection = serializers.CharField()
    quantization = serializers.ChoiceField(choices=QUANTIZATIONS)
    timeoutSeconds = serializers.IntegerField()
    hasApiKey = serializers.BooleanField()
    apiKeyMasked = serializers.CharField(allow_null=True, help_text="'***' and the key's last 4 characters.")
    mode = serializers.ChoiceField(
        choices=["none", "memory", "path", "server"], help_text="What ``host`` names."
    )


# -- health and Qdrant actions ------------------------------------------------------------------------


class HealthStageSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    latencyMs = serializers.FloatField()
    skipped = serializers.BooleanField(required=False, help_text="The stage had nothing to check.")
    reason = serializers.CharField(required=False, help_text="Why it was skipped.")
    error = serializers.CharField(required=False)


class HealthStagesSerializer(serializers.Serializer):
    """The stages that ran (none when the setup failed)."""

    write = HealthStageSerializer(required=False)
    fts = HealthStageSerializer(required=False)
    vector = HealthStageSerializer(required=False)
    read = HealthStageSerializer(required=False)
    delete = HealthStageSerializer(required=False)


class HealthReportSerializer(serializers.Serializer):
    working = serializers.BooleanField()
    latencyMs = serializers.FloatField()
    stages = HealthStagesSerializer()
    error = serializers.CharField(required=False, help_text="The first failure: '<stage>: <message>'.")


class QdrantHealthSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    latencyMs = serializers.FloatField()
    error = serializers.CharField(required=False, help_text="'not_configured' when Qdrant is off.")


class QdrantPointPayloadSerializer(serializers.Serializer):
    apiKeyId = serializers.UUIDField()
    sessionId = serializers.CharField(allow_blank=True)
    type = serializers.ChoiceField(choices=MemoryType.choices)
    key = serializers.CharField(allow_blank=True)
    content = serializers.CharField()
    createdAt = serializers.DateTimeField()
    expiresAt = serializers.DateTimeField(allow_null=True)


class QdrantSearchHitSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    score = serializers.FloatField()
    payload = QdrantPointPayloadSerializer()


class QdrantSearchResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    results = QdrantSearchHitSerializer(many=True)
    latencyMs = serializers.FloatField(required=False)
    collection = serializers.CharField(required=False)
    error = serializers.CharField(required=False)


class QdrantCleanupResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    deletedCount = serializers.IntegerField()
    retentionDays = serializers.IntegerField()
    error = serializers.CharField(required=False)


class ReindexStartedSerializer(serializers.Serializer):
    started = serializers.BooleanField()
    pending = serializers.IntegerField(help_text="Memories without a usable vector.")


class KeywordStatusSerializer(serializers.Serializer):
    available = serializers.BooleanField()
    backend = serializers.CharField()
    reason = serializers.CharField()


class CacheStatsSerializer(CacheCountsSerializer):
    hitRate = serializers.FloatField()
    size = serializers.IntegerField()


class CircuitStatusSerializer(serializers.Serializer):
    """A remote dependency's circuit breaker (``memory.breaker.CircuitBreaker.snapshot``)."""

    state = serializers.ChoiceField(choices=["closed", "open", "half_open"])
    failures = serializers.IntegerField(help_text="Failed calls in a row.")
    threshold = serializers.IntegerField(help_text="Failures in a row that open the circuit.")
    cooldownSeconds = serializers.FloatField()
    lastFailure = serializers.CharField(allow_null=True)
    lastFailureAt = serializers.DateTimeField(allow_null=True)
    lastSuccessAt = serializers.DateTimeField(allow_null=True)
    openedAt = serializers.DateTimeField(allow_null=True)
    retryAt = serializers.DateTimeField(allow_null=True, help_text="While open: the next trial.")


class EmbeddingStatusSerializer(serializers.Serializer):
    source = serializers.CharField(allow_null=True)  # type: ignore[assignment]  # see MemoryListResponseSerializer
    model = serializers.CharField(allow_null=True)
    dimensions = serializers.IntegerField(allow_null=True)
    signature = serializers.CharField()
    available = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True)
    cacheStats = CacheStatsSerializer()
    circuit = CircuitStatusSerializer(
        allow_null=True, help_text="A remote source's breaker; null for a local one."
    )
    fallback = serializers.CharField(
        allow_null=True, help_text="What requests use while the source fails (null while it answers)."
    )


class Int8ScanStatusSerializer(serializers.Serializer):
    minRows = serializers.IntegerField()
    dim = serializers.IntegerField(allow_null=True)
    exact = serializers.BooleanField(allow_null=True, help_text="The kernel's self-check (null: not run).")
    active = serializers.BooleanField()
    reason = serializers.CharField()


class VectorStoreStatusSerializer(serializers.Serializer):
    backend = serializers.CharField()
    available = serializers.BooleanField()
    rowCount = serializers.IntegerField()
    needsReindex = serializers.IntegerField(help_text="Memories without a usable vector.")
    activeDim = serializers.IntegerField(allow_null=True)
    signature = serializers.CharField(allow_null=True, help_text="What the vector table holds.")
    expectedSignature = serializers.CharField(allow_null=True, help_text="What the live source makes.")
    stale = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True)
    int8Scan = Int8ScanStatusSerializer()


class QdrantStatusSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    healthy = serializers.BooleanField(allow_null=True)
    latencyMs = serializers.FloatField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    circuit = CircuitStatusSerializer(required=False, allow_null=True, help_text="When enabled.")
    fallback = serializers.CharField(
        required=False, allow_null=True, help_text="When enabled: the store searched instead of Qdrant."
    )


class RerankStatusSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    provider = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_null=True)
    available = serializers.BooleanField()
    reason = serializers.CharField()


class IndexCountsSerializer(serializers.Serializer):
    memories = serializers.IntegerField()
    fts = serializers.IntegerField(help_text="FTS5 documents")
    vectors = serializers.IntegerField(allow_null=True, help_text="sqlite-vec vectors; null: no vector table")
    pending = serializers.IntegerField(help_text="memories waiting for their vector")
    consistent = serializers.BooleanField(help_text="fts = memories and vectors + pending = memories")


class QueueStatusSerializer(serializers.Serializer):
    backend = serializers.CharField(help_text="redis or sqlite")
    immediate = serializers.BooleanField(help_text="tasks run inline at enqueue (HUEY_IMMEDIATE)")
    reachable = serializers.BooleanField(help_text="the queue answered this probe")
    pending = serializers.IntegerField(
        allow_null=True, help_text="tasks waiting in the queue; null: unreachable"
    )
    failedHandoffs = serializers.IntegerField(
        help_text="enqueues that failed in this process since the last one that worked"
    )
    lastError = serializers.CharField(allow_null=True)
    reason = serializers.CharField()


class BackendHealthSerializer(serializers.Serializer):
    """A memory provider's answer to its health probe (``memory.backends.base.Health``)."""

    ok = serializers.BooleanField()
    latencyMs = serializers.FloatField()
    error = serializers.CharField(allow_null=True, help_text="Why it is not healthy.")
    detail = serializers.DictField(help_text="What the backend uses: vector search, version, bounds.")


class ProviderHealthEntrySerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    health = BackendHealthSerializer()


class FallbackEventSerializer(serializers.Serializer):
    apiKeyId = serializers.UUIDField()
    operation = serializers.CharField(help_text="store, get, update, delete, clear, list, count, search, …")
    failed = serializers.CharField(help_text="The provider that failed or missed.")
    used = serializers.CharField(allow_null=True, help_text="The provider that answered; null: none could.")
    reason = serializers.CharField()
    at = serializers.DateTimeField()


class ProvidersStatusSerializer(serializers.Serializer):
    providers = ProviderHealthEntrySerializer(many=True, help_text="Those the caller's API keys reach.")
    fallbackEvents = FallbackEventSerializer(many=True, help_text="The last 100, newest first.")
    replayQueue = serializers.DictField(
        allow_null=True,
        help_text="The writes fallbacks kept, waiting for their provider (memory.backends.durable."
        "pending_summary); null for a token bound to API keys (it names every key).",
    )


class EngineStatusSerializer(serializers.Serializer):
    keyword = KeywordStatusSerializer()
    embedding = EmbeddingStatusSerializer()
    vectorStore = VectorStoreStatusSerializer()
    qdrant = QdrantStatusSerializer()
    rerank = RerankStatusSerializer()
    memories = serializers.IntegerField()
    indexes = IndexCountsSerializer(help_text="manage.py verify_indexes checks and repairs in full")
    queue = QueueStatusSerializer(help_text="the background task queue (Huey)")
    providers = ProvidersStatusSerializer(help_text="memory providers: health and recent fallbacks")


class EmbeddingModelSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="provider/model")
    name = serializers.CharField()
    dimensions = serializers.IntegerField(allow_null=True)
    built = serializers.BooleanField(required=False, help_text="Local models: whether it is built.")


class EmbeddingProviderSerializer(serializers.Serializer):
    provider = serializers.CharField()
    hasKey = serializers.BooleanField()
    models = EmbeddingModelSerializer(many=True)


class EmbeddingProvidersSerializer(serializers.Serializer):
    providers = EmbeddingProviderSerializer(many=True)


# -- the audit log ------------------------------------------------------------------------------------


class AuditActorSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="token, user, apikey, command or system")
    id = serializers.CharField(allow_blank=True)
    name = serializers.CharField(allow_blank=True)
    via = serializers.CharField(help_text="rest, mcp, studio, admin, command or task")


class AuditEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    action = serializers.CharField(
        help_text="memory.delete, memory.clear, memory.bulk_delete, memory.summarize, …"
    )
    actor = AuditActorSerializer()
    apiKeyId = serializers.UUIDField(
        allow_null=True, help_text="The owner; null for a global change (settings)."
    )
    count = serializers.IntegerField(help_text="Rows (or settings) the operation changed.")
    details = serializers.DictField(help_text="What the operation was given and did.")


class AuditListResponseSerializer(serializers.Serializer):
    # The JSON key shadows Serializer.data only for the stubs (see MemoryListResponseSerializer).
    data = AuditEventSerializer(many=True)  # type: ignore[assignment]
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


# -- memory providers and API keys ----------------------------------------------------------------------


class CapabilitiesSerializer(serializers.Serializer):
    keyword = serializers.BooleanField()
    vector = serializers.BooleanField()
    hybrid = serializers.BooleanField()
    filters = serializers.BooleanField()


class ProviderUserSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=["primary", "fallback"])


class ProviderSerializer(serializers.Serializer):
    """A memory provider (``memory.services.providers.provider_json``)."""

    id = serializers.UUIDField()
    name = serializers.CharField()
    type = serializers.CharField()
    capabilities = CapabilitiesSerializer(allow_null=True, help_text="null when configError is set.")
    health = BackendHealthSerializer(allow_null=True, help_text="null unless the probe was asked for.")
    config = serializers.DictField(
        allow_null=True, help_text="The type's configuration, every secret shown as ********."
    )
    configError = serializers.CharField(
        allow_null=True, help_text="Why the stored configuration no longer parses or opens."
    )
    usedBy = ProviderUserSerializer(many=True, help_text="The API keys using it (the caller's only).")
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class ProviderListSerializer(serializers.Serializer):
    data = ProviderSerializer(many=True)  # type: ignore[assignment]


class ProviderTestSerializer(serializers.Serializer):
    name = serializers.CharField()
    health = BackendHealthSerializer()


class ApiKeySerializer(serializers.Serializer):
    """An API key (``memory.services.providers.key_json``); never its secret."""

    id = serializers.UUIDField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    allowGlobalScope = serializers.BooleanField()
    createdAt = serializers.DateTimeField()
    revokedAt = serializers.DateTimeField(allow_null=True)
    lastUsedAt = serializers.DateTimeField(allow_null=True)
    provider = serializers.CharField(
        allow_null=True, help_text="The provider's name; null: the native store."
    )
    fallbacks = serializers.ListField(child=serializers.CharField(), help_text="Provider names, in order.")
    memoryCount = serializers.IntegerField(
        allow_null=True, help_text="null when the key's provider cannot be reached."
    )
    compositeWeights = serializers.DictField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="This key's composite weights (semantic, recency, importance); null: the settings'.",
    )
    recencyHalfLifeDays = serializers.FloatField(
        allow_null=True, help_text="This key's recency half-life in days; null: the settings'."
    )


class ApiKeyCreatedSerializer(ApiKeySerializer):
    secret = serializers.CharField(help_text="Shown once: it is not stored.")


class ApiKeyListSerializer(serializers.Serializer):
    data = ApiKeySerializer(many=True)  # type: ignore[assignment]
    total = serializers.IntegerField()


class ApiKeyDeletedSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    deletedMemories = serializers.IntegerField()


class MemoryClearResultSerializer(serializers.Serializer):
    matched = serializers.IntegerField()
    deletedCount = serializers.IntegerField(help_text="0 on a dry run.")
    ids = serializers.ListField(
        child=serializers.UUIDField(), help_text="The first 1000 matches, oldest first."
    )
    dryRun = serializers.BooleanField()


# -- the injection ledger (memory.services.ledger.entry_json) ---------------------------------------------


class InjectedMemorySerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The memory's id (it may be deleted since).")
    rank = serializers.IntegerField(help_text="1 for the first memory of the message.")
    tier = serializers.CharField(help_text="vector, qdrant, hybrid-rrf, fts5, recent, keyword, …")
    score = serializers.FloatField()
    signals = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text="vec, fts, session (scores; null where the tier computed none), answerType and "
        "inPeriod (1.0 or 0.0).",
    )
    tokens = serializers.IntegerField()
    deleted = serializers.BooleanField(help_text="The memory was deleted since: its text is not shown.")


class InjectionExtractionSerializer(serializers.Serializer):
    ran = serializers.BooleanField(help_text="false: the exchange was not learned from.")
    learned = serializers.ListField(child=serializers.UUIDField(), help_text="The memories it wrote.")
    error = serializers.CharField(allow_null=True, help_text="Why extraction failed, after its retries.")


class InjectionSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The injection id: the answer's x-omniroute-injection-id.")
    at = serializers.DateTimeField()
    apiKeyId = serializers.UUIDField()
    sessionId = serializers.CharField(allow_blank=True)
    model = serializers.CharField(help_text="The model as the client requested it.")
    strategy = serializers.CharField(help_text="The retrieval strategy really used.")
    tiers = serializers.ListField(
        child=serializers.CharField(), help_text="The tiers the memories came from."
    )
    memories = InjectedMemorySerializer(many=True)
    totalTokens = serializers.IntegerField()
    latencyMs = serializers.FloatField(help_text="How long the recall took.")
    extraction = InjectionExtractionSerializer(
        allow_null=True, help_text="null until the exchange's extraction ran."
    )
    requestId = serializers.CharField(allow_blank=True, help_text="The upstream's x-request-id.")


class InjectionDetailSerializer(InjectionSerializer):
    systemMessage = serializers.CharField(help_text="The memory message exactly as it was injected.")
    query = serializers.CharField(
        allow_blank=True, help_text="The text retrieval ranked for: the request's last user message."
    )


class InjectionListResponseSerializer(serializers.Serializer):
    data = InjectionSerializer(many=True)  # type: ignore[assignment]
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


# -- contradictions (memory.services.contradictions) -------------------------------------------------


class ContradictionSerializer(serializers.Serializer):
    """A contradiction found on write (``memory.services.contradictions.contradiction_json``)."""

    id = serializers.UUIDField()
    apiKeyId = serializers.UUIDField()
    verdict = serializers.ChoiceField(
        choices=["supersedes", "contradicts", "ambiguous"],
        help_text="supersedes: applied on write (the old one is history); the others wait for review.",
    )
    subject = serializers.CharField(
        allow_blank=True, help_text="The slot both state: residence, preference:cat…"
    )
    reason = serializers.CharField(allow_blank=True, help_text="One sentence for the reviewer.")
    confidence = serializers.FloatField(
        allow_null=True,
        min_value=0.0,
        max_value=1.0,
        help_text="The rules' confidence (0..1) that the two conflict (docs/cognitive.md); null for one "
        "recorded before it was scored.",
    )
    status = serializers.ChoiceField(choices=["open", "resolved"])
    resolution = serializers.ChoiceField(
        choices=["keep_old", "keep_new", "keep_both", "merge", "auto", "consolidated"],
        allow_null=True,
        help_text="null while open; auto: a supersession applied on write; consolidated: settled by a "
        "consolidation (both sides became one memory, or one side was no longer current).",
    )
    createdAt = serializers.DateTimeField()
    resolvedAt = serializers.DateTimeField(allow_null=True)
    old = MemorySerializer()
    new = MemorySerializer()


class ContradictionListResponseSerializer(serializers.Serializer):
    data = ContradictionSerializer(many=True)  # type: ignore[assignment]
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
