import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from memory.backends.registry import TYPES
from memory.exceptions import DomainError
from memory.models import ApiKey, ManagementToken, Memory, MemoryProvider, Setting, VectorMeta
from memory.services import providers as provider_services
from memory.services.audit import SYSTEM, Actor, user_actor
from memory.services.credentials import credential_delete, credential_revoke
from memory.services.memories import memory_delete
from memory.services.providers import key_delete
from memory.services.retention import bulk_delete


def _actor(request: HttpRequest | None) -> Actor:
    """The staff user behind an admin action (the system when called without a request)."""
    user = getattr(request, "user", None)
    return user_actor(user, via="admin") if user is not None else SYSTEM


def _save_with_revocation(admin_save: Any, request: HttpRequest, obj: Any, form: forms.ModelForm) -> None:
    """Save a changed key or token; a revocation set in the form goes through ``credential_revoke``
    (so it is written to the audit log)."""
    revoking = (
        "revoked_at" in form.changed_data
        and obj.revoked_at is not None
        and not form.initial.get("revoked_at")
    )
    at = obj.revoked_at
    if revoking:
        obj.revoked_at = None
    admin_save(request, obj, form, True)
    if revoking:
        credential_revoke(obj, actor=_actor(request), at=at)


class _AuditedCredentialDelete(admin.ModelAdmin):
    """Deletes keys and tokens (one, or the "delete selected" action) through the services, so that
    each deletion is written to the audit log with the staff user and the memories it took: an API
    key through ``providers.key_delete`` (which first clears a provider-backed key's memories on its
    provider), a token through ``credential_delete``."""

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self._delete(obj, actor=_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        actor = _actor(request)
        with transaction.atomic():
            for credential in queryset:
                self._delete(credential, actor=actor)

    @staticmethod
    def _delete(credential: ApiKey | ManagementToken, *, actor: Actor) -> None:
        if isinstance(credential, ApiKey):
            key_delete(credential, actor=actor)
        else:
            credential_delete(credential, actor=actor)


def _add_domain_error(form: forms.BaseForm, exc: DomainError, fields: dict[str, str]) -> None:
    """Show a service's error next to the form field it names (``fields``: the service's field name,
    or its first part, to the form's), else at the top of the form."""
    for detail in exc.details or [{"field": "", "message": exc.message}]:
        name = detail.get("field", "")
        target = fields.get(name) or fields.get(name.split(".", 1)[0].split("[", 1)[0])
        form.add_error(target, f"{name}: {detail['message']}" if name and target else detail["message"])


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


class ApiKeyForm(forms.ModelForm):
    """The key's own fields, and where its memories live: a provider (empty: the native store) and its
    ordered fallbacks, checked by ``memory.services.providers`` (a key holding memories keeps its
    provider until they are moved)."""

    memory_provider = forms.ModelChoiceField(
        MemoryProvider.objects.all(),
        required=False,
        to_field_name="name",
        label="Memory provider",
        help_text="Empty: the native store (this database).",
    )
    fallback_names = forms.CharField(
        required=False,
        label="Fallbacks",
        help_text="Provider names, comma separated, tried in this order when the provider is down.",
    )

    class Meta:
        model = ApiKey
        fields = ("name", "allow_global_scope", "revoked_at")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        key = self.instance
        if key.pk is not None:
            self.initial["memory_provider"] = key.provider.name if key.provider is not None else None
            self.initial["fallback_names"] = ", ".join(provider_services.key_json(key)["fallbacks"])

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        provider = cleaned.get("memory_provider")
        try:
            provider_services.key_selection_check(
                self.instance if self.instance.pk is not None else None,
                provider=provider.name if provider is not None else None,
                fallbacks=_names(cleaned.get("fallback_names") or ""),
            )
        except DomainError as exc:
            _add_domain_error(self, exc, {"provider": "memory_provider", "fallbacks": "fallback_names"})
        return cleaned


@admin.register(ApiKey)
class ApiKeyAdmin(_AuditedCredentialDelete):
    form = ApiKeyForm
    list_display = (
        "name",
        "id",
        "prefix",
        "provider",
        "allow_global_scope",
        "created_at",
        "revoked_at",
        "last_used_at",
    )
    list_select_related = ("provider",)
    search_fields = ("name", "id", "prefix")
    readonly_fields = ("id", "prefix", "created_at", "last_used_at")
    fields = (
        "id",
        "name",
        "prefix",
        "allow_global_scope",
        "memory_provider",
        "fallback_names",
        "created_at",
        "revoked_at",
        "last_used_at",
    )

    def save_model(self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm, change: bool) -> None:
        provider = form.cleaned_data.get("memory_provider")
        provider_name = provider.name if provider is not None else None
        fallbacks = _names(form.cleaned_data.get("fallback_names") or "")
        if change:
            _save_with_revocation(super().save_model, request, obj, form)
            provider_services.key_set_provider(
                obj, provider=provider_name, fallbacks=fallbacks, actor=_actor(request)
            )
            return
        key, secret = provider_services.key_create(
            name=obj.name,
            allow_global_scope=obj.allow_global_scope,
            provider=provider_name,
            fallbacks=fallbacks,
            actor=_actor(request),
        )
        obj.pk = key.pk
        messages.warning(request, f"API key created. Copy the secret now, it is not shown again: {secret}")


class MemoryProviderForm(forms.ModelForm):
    """A provider's name, type and configuration (JSON, secrets shown masked: leave ******** to keep
    one), validated by ``memory.services.providers.provider_validate``: an error is shown next to the
    field it names. The model's own fields are not bound to the form, so the service compares the
    saved provider with the new values (a type change of a provider in use is refused)."""

    provider_name = forms.CharField(label="Name", max_length=64)
    provider_type = forms.ChoiceField(label="Type", choices=[(t, t) for t in sorted(TYPES)])
    config = forms.JSONField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 12, "cols": 80}),
        help_text="The type's configuration as a JSON object (docs/providers.md).",
    )

    class Meta:
        model = MemoryProvider
        fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        provider = self.instance
        if provider.pk is not None:
            self.initial["provider_name"] = provider.name
            self.initial["provider_type"] = provider.type
            self.initial["config"] = provider_services.provider_json(provider)["config"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        config = cleaned.get("config")
        if "config" in cleaned and config is None:
            cleaned["config"] = config = {}
        if self.errors:
            return cleaned
        try:
            provider_services.provider_validate(
                name=cleaned["provider_name"],
                type=cleaned["provider_type"],
                config=config,
                existing=self.instance if self.instance.pk is not None else None,
            )
        except DomainError as exc:
            _add_domain_error(
                self, exc, {"name": "provider_name", "type": "provider_type", "config": "config"}
            )
        return cleaned


@admin.register(MemoryProvider)
class MemoryProviderAdmin(admin.ModelAdmin):
    form = MemoryProviderForm
    list_display = ("name", "type", "created_at", "updated_at")
    search_fields = ("name",)
    readonly_fields = ("masked_config", "created_at", "updated_at")
    fields = ("provider_name", "provider_type", "config", "masked_config", "created_at", "updated_at")

    @admin.display(description="Stored configuration (secrets masked)")
    def masked_config(self, obj: MemoryProvider) -> str:
        if obj.pk is None:
            return "-"
        shown = provider_services.provider_json(obj)
        return shown["configError"] or json.dumps(shown["config"], indent=2, sort_keys=True)

    def save_model(
        self, request: HttpRequest, obj: MemoryProvider, form: forms.ModelForm, change: bool
    ) -> None:
        saved = provider_services.provider_save(
            name=form.cleaned_data["provider_name"],
            type=form.cleaned_data["provider_type"],
            config=form.cleaned_data["config"],
            actor=_actor(request),
            existing=obj if change else None,
        )
        obj.pk = saved.pk
        obj._state.adding = False

    # Django's delete views refuse a provider a key still uses (the keys' foreign keys PROTECT it).
    def delete_model(self, request: HttpRequest, obj: MemoryProvider) -> None:
        provider_services.provider_delete(obj, actor=_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[MemoryProvider]) -> None:
        actor = _actor(request)
        with transaction.atomic():
            for provider in queryset:
                provider_services.provider_delete(provider, actor=actor)


class ManagementTokenForm(forms.ModelForm):
    """Only an admin token may be bound to no API key (global)."""

    class Meta:
        model = ManagementToken
        fields = ("name", "scope", "owners", "revoked_at")

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        scope, owners = cleaned.get("scope"), cleaned.get("owners")
        if scope and owners is not None:
            problem = ManagementToken.reach_problem(scope, bound=owners.exists())
            if problem:
                self.add_error("owners", f"{problem}. Choose at least one, or make it an admin token.")
        return cleaned


@admin.register(ManagementToken)
class ManagementTokenAdmin(_AuditedCredentialDelete):
    form = ManagementTokenForm
    list_display = ("name", "scope", "prefix", "created_at", "revoked_at", "last_used_at")
    list_filter = ("scope",)
    search_fields = ("name", "prefix")
    readonly_fields = ("id", "prefix", "created_at", "last_used_at")
    filter_horizontal = ("owners",)
    fields = ("id", "name", "scope", "owners", "prefix", "created_at", "revoked_at", "last_used_at")

    def save_model(
        self, request: HttpRequest, obj: ManagementToken, form: forms.ModelForm, change: bool
    ) -> None:
        if change:
            return _save_with_revocation(super().save_model, request, obj, form)
        token, secret = ManagementToken.issue(
            name=obj.name, scope=obj.scope, owners=form.cleaned_data["owners"]
        )
        obj.pk = token.pk
        obj._state.adding = False
        messages.warning(request, f"Token created. Copy the secret now, it is not shown again: {secret}")


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = ("key", "type", "owner", "session_id", "created_at", "expires_at", "needs_reindex")
    list_filter = ("type", "needs_reindex")
    search_fields = ("key", "content", "uuid")
    list_select_related = ("owner",)
    readonly_fields = ("seq", "uuid", "created_at", "updated_at", "access_count", "last_accessed_at")
    raw_id_fields = ("owner",)

    # Through the services, so that every vector index drops the memories too (memory.services.vectorsync).
    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        memory_delete(obj, actor=_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        bulk_delete(queryset, actor=_actor(request))


@admin.register(VectorMeta)
class VectorMetaAdmin(admin.ModelAdmin):
    list_display = ("id", "embedding_signature", "active_dim", "vec_loaded", "last_reset_at")
    readonly_fields = ("id", "embedding_signature", "active_dim", "vec_loaded", "last_reset_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Setting)
class SettingAdmin(admin.ModelAdmin):
    list_display = ("key", "value", "updated_at")
