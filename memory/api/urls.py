from django.urls import path

from memory.api import views

# Paths are the reference's: no trailing slash.
urlpatterns = [
    path("memory", views.MemoryCollectionView.as_view(), name="memory-list"),
    path("memory/bulk", views.MemoryBulkView.as_view(), name="memory-bulk"),
    path("memory/<str:memory_id>", views.MemoryDetailView.as_view(), name="memory-detail"),
    path("settings/memory", views.MemorySettingsView.as_view(), name="settings-memory"),
]
