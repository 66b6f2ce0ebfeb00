from django.urls import path

from memory.api import views_cognitive, views_consolidation

# Included before memory/<id>: these fixed names must win over a memory id.
urlpatterns = [
    path(
        "memory/contradictions",
        views_cognitive.ContradictionListView.as_view(),
        name="contradiction-list",
    ),
    path(
        "memory/contradictions/<str:contradiction_id>/resolve",
        views_cognitive.ContradictionResolveView.as_view(),
        name="contradiction-resolve",
    ),
    path("memory/consolidate", views_consolidation.ConsolidateView.as_view(), name="memory-consolidate"),
    path(
        "memory/consolidate/<str:run_id>/undo",
        views_consolidation.ConsolidationUndoView.as_view(),
        name="memory-consolidate-undo",
    ),
]
