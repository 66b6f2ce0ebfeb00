from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class GatewayConfig(AppConfig):
    name = "gateway"
    verbose_name = "Gateway"

    def ready(self) -> None:
        # app loading: apps.py may not import models at module level (the registry is not ready then)
        from gateway.models import UpstreamProvider
        from gateway.providers import PROVIDERS

        for signal in (post_save, post_delete):
            signal.connect(PROVIDERS.invalidate, sender=UpstreamProvider, dispatch_uid=f"providers-{signal}")
