"""Websocket routes of the Studio (live updates)."""

websocket_urlpatterns: list = []
