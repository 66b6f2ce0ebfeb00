from django import forms
from django.contrib import admin

from gateway.models import UpstreamProvider


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

    def clean_api_key(self) -> str:
        value = self.cleaned_data.get("api_key", "")
        if not value and self.instance.pk:
            return self.instance.api_key
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
        key = obj.api_key or ""
        if not key:
            return "—"
        return f"{key[:3]}…{key[-4:]}" if len(key) > 12 else "••••"
