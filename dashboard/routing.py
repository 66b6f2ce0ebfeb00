"""Websocket routes of the Studio (live updates)."""

from django.urls import path

from dashboard.consumers import LedgerConsumer, StudioConsumer

websocket_urlpatterns = [
    path("ws/dashboard/memory/", StudioConsumer.as_asgi()),
    path("ws/dashboard/ledger/", LedgerConsumer.as_asgi()),
]
