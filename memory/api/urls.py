from django.urls import include, path

from memory.api import views, views_audit

# Paths are the original's: no trailing slash. Routes under memory/ with a
# fixed name must come before memory/<id>.
urlpatterns = [
    path("", include("memory.api.urls_ledger")),
    path("", include("memory.api.urls_cognitive")),
    path("", include("memory.api.urls_retrieval")),
    path("", include("memory.api.urls_lifecycle")),
    path("", include("memory.api.urls_qdrant")),
    path("", include("memory.api.urls_providers")),
    path("memory", views.MemoryCollectionView.as_view(), name="memory-list"),
    path("memory/bulk", views.MemoryBulkView.as_view(), name="memory-bulk"),
    path("memory/<str:memory_id>", views.MemoryDetailView.as_view(), name="memory-detail"),
    path("settings/memory", views.MemorySettingsView.as_view(), name="settings-memory"),
    path("audit", views_audit.AuditListView.as_view(), name="audit-list"),
]
