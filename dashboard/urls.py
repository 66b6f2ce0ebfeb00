from django.urls import path

from dashboard.views import audit, engine, memories, sandbox, settings_page, shell, transfer

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
]
