"""Upstream LLM providers the gateway forwards chat requests to (configured in the database)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxLengthValidator, MinValueValidator
from django.db import models, transaction
from django.db.models import Q

from memory.crypto import EncryptedTextField
from memory.injection import DEFAULT_PROVIDER_ROLES, ProviderRoles


def default_timeout_seconds() -> float:
    """``UPSTREAM_TIMEOUT_SECONDS``, read when a provider is created (never at import time)."""
    return float(settings.UPSTREAM_TIMEOUT_SECONDS)


class SystemRole(models.TextChoices):
    AUTO = "auto", "Auto (by provider and model name)"
    SYSTEM = "system", "System message"
    USER = "user", "User message (provider has no system role)"


# Operator overrides of memory.injection's name registry.
_ALWAYS_USER = ProviderRoles(without_system_role=("*",), system_first=())
_ALWAYS_SYSTEM = ProviderRoles(without_system_role=(), system_first=DEFAULT_PROVIDER_ROLES.system_first)


class UpstreamProvider(models.Model):
    """An OpenAI-compatible upstream (``POST {base_url}/chat/completions``).

    Routing contract (:func:`gateway.providers.select_provider`): among enabled providers, the one
    whose non-blank ``model_prefix`` is the longest prefix of the requested model wins; otherwise the
    enabled provider marked ``is_default``; otherwise an enabled provider with a blank prefix (first by
    name). At most one provider is the default (a partial unique constraint; saving one as default
    clears the flag on the others).

    ``api_key`` must be sent upstream, so it is kept reversibly: encrypted at rest
    (:class:`memory.crypto.EncryptedTextField`, bound to this row), clear on the instance, never shown
    back (masked in the admin).
    ``system_role`` says how the memory message reaches this provider: ``auto`` asks
    :mod:`memory.injection`'s registry (:class:`~memory.injection.ProviderRoles`) about the provider
    name and then the upstream model name; ``system``/``user`` override it for this provider.
    """

    name = models.CharField(
        max_length=100, unique=True, help_text="Provider id, e.g. openai, glm, xiaomi-mimo."
    )
    base_url = models.URLField(max_length=500, help_text="e.g. https://api.openai.com/v1")
    api_key = EncryptedTextField(
        blank=True,
        validators=[MaxLengthValidator(500)],
        help_text="Sent upstream as a Bearer token; stored encrypted.",
    )
    model_prefix = models.CharField(
        max_length=100, blank=True, help_text="Models starting with this are routed here (blank: none)."
    )
    strip_prefix = models.BooleanField(
        default=False, help_text="Remove the model prefix before forwarding (glm/glm-4 → glm-4)."
    )
    model_ids = models.TextField(
        blank=True,
        help_text="Model ids listed by GET /v1/models, one per line. Blank: ask the upstream's /models.",
    )
    is_default = models.BooleanField(default=False, help_text="Used when no model prefix matches.")
    system_role = models.CharField(max_length=8, choices=SystemRole.choices, default=SystemRole.AUTO)
    timeout_seconds = models.FloatField(
        default=default_timeout_seconds,
        validators=[MinValueValidator(0.1)],
        help_text="Upstream timeout (connect, and each read while streaming); exceeded → 504.",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-is_default", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=Q(is_default=True), name="gateway_one_default_provider"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        with transaction.atomic():
            if self.is_default:
                UpstreamProvider.objects.filter(is_default=True).exclude(pk=self.pk).update(is_default=False)
            super().save(*args, **kwargs)

    @property
    def chat_completions_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def models_url(self) -> str:
        return self.base_url.rstrip("/") + "/models"

    @property
    def embeddings_url(self) -> str:
        return self.base_url.rstrip("/") + "/embeddings"

    @property
    def model_names(self) -> list[str]:
        """The configured model ids (blank lines and surrounding spaces dropped)."""
        return [line.strip() for line in self.model_ids.splitlines() if line.strip()]

    def upstream_model(self, model: str) -> str:
        """The model id to send upstream for the client's ``model``."""
        if self.strip_prefix and self.model_prefix and model.startswith(self.model_prefix):
            return model[len(self.model_prefix) :]
        return model

    def injection_target(self, upstream_model: str) -> tuple[str, ProviderRoles]:
        """``(provider id, roles)`` to pass to :func:`memory.injection.inject_memory`.

        In ``auto`` mode a model the registry lists (``o1``, ``o1-mini``…) behind a provider with another
        name still gets the memory as a user message.
        """
        if self.system_role == SystemRole.USER:
            return self.name, _ALWAYS_USER
        if self.system_role == SystemRole.SYSTEM:
            return self.name, _ALWAYS_SYSTEM
        if DEFAULT_PROVIDER_ROLES.supports_system_message(
            self.name
        ) and not DEFAULT_PROVIDER_ROLES.supports_system_message(upstream_model):
            return upstream_model, DEFAULT_PROVIDER_ROLES
        return self.name, DEFAULT_PROVIDER_ROLES
