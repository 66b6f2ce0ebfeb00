from django.urls import path

from dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.index, name="index"),
    path("memory", views.memory_page, name="memory"),
    path("memory/add", views.memory_add, name="memory-add"),
    path("memory/export", views.memory_export, name="memory-export"),
    path("memory/import", views.memory_import, name="memory-import"),
    path("memory/compact", views.memory_compact, name="memory-compact"),
    path("memory/health", views.memory_health, name="memory-health"),
    path("memory/enabled", views.memory_enabled, name="memory-enabled"),
    path("memory/inject", views.sandbox_inject, name="sandbox-inject"),
    path("memory/reindex", views.engine_reindex, name="engine-reindex"),
    path("memory/engine-settings", views.engine_settings, name="engine-settings"),
    path("memory/qdrant", views.engine_qdrant, name="engine-qdrant"),
    path("memory/<uuid:memory_id>/row", views.memory_row, name="memory-row"),
    path("memory/<uuid:memory_id>/edit", views.memory_edit, name="memory-edit"),
    path("memory/<uuid:memory_id>/delete", views.memory_delete_view, name="memory-delete"),
    path("settings", views.settings_page, name="settings"),
]
