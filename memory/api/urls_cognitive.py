from django.urls import path

from memory.api import views_cognitive

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
]
