from django.urls import path

from memory.api import views_ledger

# Included before memory/<id>: these fixed names must win over a memory id.
urlpatterns = [
    path("memory/injections", views_ledger.InjectionListView.as_view(), name="injection-list"),
    path(
        "memory/injections/<str:injection_id>",
        views_ledger.InjectionDetailView.as_view(),
        name="injection-detail",
    ),
]
