from typing import Any

from django import forms
from django.contrib import admin

from gateway.models import UpstreamProvider
from memory.crypto import SecretUnreadable

UNREADABLE = (
    "The stored key cannot be read with the current MEMORY_ENCRYPTION_KEY (it was encrypted with "
    "another key): configure the key it was written with, or enter the provider's API key again."
)


def _stored_key_unreadable(provider: UpstreamProvider) -> bool:
    try:
        provider.api_key  # noqa: B018  (reading it is the test)
    except SecretUnreadable:
        return True
    return False


class UpstreamProviderForm(forms.ModelForm):
    class Meta:
        model = UpstreamProvider
        fields = (
            "name",
            "base_url",
            "api_key",
            "model_prefix",
            "strip_prefix",
            "model_ids",
            "is_default",
            "system_role",
            "timeout_seconds",
            "enabled",
        )
        # The key is write-only in the admin: shown masked, and left unchanged when the field is empty.
        widgets = {"api_key": forms.PasswordInput(render_value=False)}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and _stored_key_unreadable(self.instance):
            self.fields["api_key"].help_text = UNREADABLE

    def clean_api_key(self) -> str:
        value = self.cleaned_data.get("api_key", "")
        if not value and self.instance.pk:
            try:
                return self.instance.api_key
            except SecretUnreadable:
                raise forms.ValidationError(UNREADABLE) from None
        return value


@admin.register(UpstreamProvider)
class UpstreamProviderAdmin(admin.ModelAdmin):
    form = UpstreamProviderForm
    list_display = (
        "name",
        "base_url",
        "masked_api_key",
        "model_prefix",
        "is_default",
        "system_role",
        "timeout_seconds",
        "enabled",
        "updated_at",
    )
    list_filter = ("enabled", "is_default", "system_role")
    search_fields = ("name", "base_url", "model_prefix")
    readonly_fields = ("created_at", "updated_at")

    @admin.display(description="API key")
    def masked_api_key(self, obj: UpstreamProvider) -> str:
        try:
            key = obj.api_key or ""
        except SecretUnreadable:
            return "unreadable: enter it again (encrypted with another MEMORY_ENCRYPTION_KEY)"
        if not key:
            return "—"
        return f"{key[:3]}…{key[-4:]}" if len(key) > 12 else "••••"
