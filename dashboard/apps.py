from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Memory Studio"

    def ready(self) -> None:
        # Connects the live-update relays. Here, not at the top: receivers imports memory's models, which
        # cannot load before the app registry is ready.
        from dashboard import receivers  # noqa: F401
