from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from memory import checks, receivers, signals  # noqa: F401  (registers checks and receivers)
        from memory.api import schema  # noqa: F401  (OpenAPI auth extensions)
