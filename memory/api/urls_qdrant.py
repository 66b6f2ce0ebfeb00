from django.urls import path

from memory.api import views_qdrant as views

urlpatterns = [
    path("settings/qdrant", views.QdrantSettingsView.as_view(), name="settings-qdrant"),
    path("settings/qdrant/health", views.QdrantHealthView.as_view(), name="settings-qdrant-health"),
    path("settings/qdrant/search", views.QdrantSearchView.as_view(), name="settings-qdrant-search"),
    path("settings/qdrant/cleanup", views.QdrantCleanupView.as_view(), name="settings-qdrant-cleanup"),
]
