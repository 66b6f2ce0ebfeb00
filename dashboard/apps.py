from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Memory Studio"

    def ready(self) -> None:
        from dashboard import receivers  # noqa: F401  (live-update relays)
