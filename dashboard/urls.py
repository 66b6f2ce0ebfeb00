from django.urls import path

from dashboard.views import (
    audit,
    engine,
    keys,
    memories,
    providers,
    sandbox,
    settings_page,
    shell,
    transfer,
)

app_name = "dashboard"

urlpatterns = [
    path("", shell.index, name="index"),
    path("memory", shell.memory_page, name="memory"),
    path("memory/enabled", shell.memory_enabled, name="memory-enabled"),
    path("memory/add", memories.memory_add, name="memory-add"),
    path("memory/health", memories.memory_health, name="memory-health"),
    path("memory/compact", memories.memory_compact, name="memory-compact"),
    path("memory/<uuid:memory_id>/row", memories.memory_row, name="memory-row"),
    path("memory/<uuid:memory_id>/edit", memories.memory_edit, name="memory-edit"),
    path("memory/<uuid:memory_id>/delete", memories.memory_delete_view, name="memory-delete"),
    path("memory/export", transfer.memory_export, name="memory-export"),
    path("memory/import", transfer.memory_import, name="memory-import"),
    path("memory/inject", sandbox.sandbox_inject, name="sandbox-inject"),
    path("memory/reindex", engine.engine_reindex, name="engine-reindex"),
    path("memory/engine-settings", engine.engine_settings, name="engine-settings"),
    path("memory/qdrant", engine.engine_qdrant, name="engine-qdrant"),
    path("memory/audit", audit.audit_list, name="audit"),
    path("settings", settings_page.settings_page, name="settings"),
    path("keys", keys.keys_page, name="keys"),
    path("keys/create", keys.key_create_view, name="key-create"),
    path("keys/<uuid:key_id>/row", keys.key_row, name="key-row"),
    path("keys/<uuid:key_id>/storage", keys.key_storage, name="key-storage"),
    path("keys/<uuid:key_id>/test", keys.key_test, name="key-test"),
    path("keys/<uuid:key_id>/revoke", keys.key_revoke, name="key-revoke"),
    path("keys/<uuid:key_id>/delete", keys.key_delete_view, name="key-delete"),
    path("providers", providers.providers_page, name="providers"),
    path("providers/add", providers.provider_add, name="provider-add"),
    path("providers/<str:name>/edit", providers.provider_edit, name="provider-edit"),
    path("providers/<str:name>/delete", providers.provider_delete_view, name="provider-delete"),
    path("providers/<str:name>/test", providers.provider_test, name="provider-test"),
    path("providers/<str:name>/health", providers.provider_health_dot, name="provider-health"),
]
