from django.urls import path

from memory.api import views_retrieval as views

urlpatterns = [
    path("memory/retrieve-preview", views.RetrievePreviewView.as_view(), name="memory-retrieve-preview"),
    path("memory/reindex", views.ReindexView.as_view(), name="memory-reindex"),
    path("memory/engine-status", views.EngineStatusView.as_view(), name="memory-engine-status"),
    path(
        "memory/embedding-providers",
        views.EmbeddingProvidersView.as_view(),
        name="memory-embedding-providers",
    ),
]
