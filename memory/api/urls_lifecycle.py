from django.urls import path

from memory.api import views_lifecycle

urlpatterns = [
    path("memory/summarize", views_lifecycle.SummarizeView.as_view(), name="memory-summarize"),
    path("memory/clear", views_lifecycle.ClearView.as_view(), name="memory-clear"),
    path("memory/health", views_lifecycle.HealthView.as_view(), name="memory-health"),
]
