from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memory.models import ApiKey, ManagementToken, Memory, Setting, VectorMeta
from memory.services.audit import SYSTEM, Actor, user_actor
from memory.services.credentials import credential_revoke
from memory.services.memories import memory_delete
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


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "id", "prefix", "allow_global_scope", "created_at", "revoked_at", "last_used_at")
    search_fields = ("name", "id", "prefix")
    readonly_fields = ("id", "prefix", "created_at", "last_used_at")
    fields = ("id", "name", "prefix", "allow_global_scope", "created_at", "revoked_at", "last_used_at")

    def save_model(self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm, change: bool) -> None:
        if change:
            return _save_with_revocation(super().save_model, request, obj, form)
        key, secret = ApiKey.issue(name=obj.name, allow_global_scope=obj.allow_global_scope)
        obj.pk = key.pk
        messages.warning(request, f"API key created. Copy the secret now, it is not shown again: {secret}")


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
class ManagementTokenAdmin(admin.ModelAdmin):
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
