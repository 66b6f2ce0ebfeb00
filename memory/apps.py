from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        # app loading: these modules import models, which apps.py may not do at module level (the
        # registry is not ready when it is imported)
        # (registers checks and receivers)
        from memory import checks, provider_checks, receivers, signals  # noqa: F401
        from memory.api import schema  # noqa: F401  (OpenAPI auth extensions)
        from memory.embeddings.blas import limit_blas_threads

        limit_blas_threads()
