"""Studio forms. Field rules come from the REST serializers (one source of validation):
each form parses HTML input, then runs the serializer the API uses and puts its
errors next to the matching field."""

from __future__ import annotations

import json

from django import forms
from django.utils import timezone
from rest_framework import serializers

from memory import conf, strictjson
from memory.api import serializers as api
from memory.models import ApiKey, MemoryType, TokenScope

STRATEGY_LABELS = {
    "exact": "Recent (newest first)",
    "keyword": "Keyword (FTS5 bm25)",
    "semantic": "Semantic (vector)",
    "hybrid": "Hybrid (keywords + meaning)",
    "composite": "Composite (hybrid + recency + importance)",
}


class SerializerForm(forms.Form):
    """A form whose ``clean()`` ends with a DRF serializer (``serializer_class``)."""

    serializer_class: type[serializers.Serializer]
    #: form field name → serializer field name
    field_map: dict[str, str] = {}

    def payload(self, data: dict) -> dict:
        return {self.field_map.get(name, name): value for name, value in data.items()}

    def clean(self):
        data = super().clean()
        # Fields that failed the form's own checks are left out: their error is already shown.
        payload = self.payload({name: value for name, value in data.items() if name not in self.errors})
        serializer = self.serializer_class(data=payload)
        if serializer.is_valid():
            self.validated = serializer.validated_data
            return data
        reverse = {v: k for k, v in self.field_map.items()}
        for name, messages in serializer.errors.items():
            field = reverse.get(name, name)
            if field in self.errors:
                continue
            self.add_error(field if field in self.fields else None, [str(m) for m in _flat(messages)])
        return data


def _flat(messages):
    if isinstance(messages, dict):
        for value in messages.values():
            yield from _flat(value)
    elif isinstance(messages, list):
        for value in messages:
            yield from _flat(value)
    else:
        yield messages


class JSONObjectTextField(forms.CharField):
    """A textarea holding JSON; ``""`` is ``{}``. Object-ness is the serializer's rule."""

    widget = forms.Textarea

    def to_python(self, value):
        text = (super().to_python(value) or "").strip()
        if not text:
            return {}
        try:
            return strictjson.loads(text)
        except ValueError:
            raise forms.ValidationError("Invalid JSON") from None


class MemoryForm(SerializerForm):
    """Add and inline edit: type, key, content, metadata (a JSON object), importance and expiry. The
    Studio asks for a key, as the original did; the API also accepts keyless memories.

    Importance left empty keeps the current value (the service's default for a new memory); expiry left
    empty means none (on an edit it clears the expiry). Expiry is in UTC, and must be in the future:
    a past one would hide the memory at once, which is what Delete is for."""

    serializer_class = api.MemoryCreateSerializer
    field_map = {"expires_at": "expiresAt"}

    type = forms.ChoiceField(choices=MemoryType.choices, initial=MemoryType.FACTUAL)
    key = forms.CharField(
        max_length=255, widget=forms.TextInput(attrs={"placeholder": "e.g. user.preferences.theme"})
    )
    content = forms.CharField(strip=False, widget=forms.Textarea(attrs={"rows": 3}))
    metadata = JSONObjectTextField(
        required=False,
        label="Metadata (JSON)",
        widget=forms.Textarea(
            attrs={"rows": 4, "spellcheck": "false", "data-json-object": "", "class": "mono"}
        ),
    )
    importance = forms.FloatField(
        required=False,
        min_value=0.0,
        max_value=1.0,
        widget=forms.NumberInput(attrs={"step": "0.05", "min": "0", "max": "1", "placeholder": "0.5"}),
        help_text="0 to 1: one of the signals that rank it at retrieval. Empty: unchanged (a default when new).",
    )
    expires_at = forms.DateTimeField(
        required=False,
        label="Expires (UTC)",
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Empty: never. After it, the memory is no longer listed, searched or injected.",
    )

    def clean_expires_at(self):
        value = self.cleaned_data.get("expires_at")
        if value is not None and value <= timezone.now():
            raise forms.ValidationError("Must be in the future (to remove a memory now, delete it).")
        return value

    def payload(self, data: dict) -> dict:
        # Empty importance: no change (the serializer refuses null); empty expiry: null, which clears.
        data = {name: value for name, value in data.items() if not (name == "importance" and value is None)}
        if self.serializer_class is api.MemoryCreateSerializer and data.get("expires_at") is None:
            data.pop("expires_at", None)
        return super().payload(data)

    @classmethod
    def for_memory(cls, memory, data=None) -> MemoryForm:
        initial = {
            "type": memory.type,
            "key": memory.key or "",
            "content": memory.content,
            "metadata": json.dumps(memory.metadata or {}, indent=2, ensure_ascii=False),
            "importance": memory.importance,
            "expires_at": memory.expires_at,
        }
        form = cls(data, initial=initial)
        form.serializer_class = api.MemoryUpdateSerializer
        return form


class SandboxForm(forms.Form):
    """Simulate: the gateway's retrieval for a query. A field left empty means the gateway's value;
    the page prefills strategy and budget from the settings."""

    query = forms.CharField(max_length=8000)
    strategy = forms.ChoiceField(choices=list(STRATEGY_LABELS.items()), required=False)
    budget = forms.IntegerField(min_value=1, max_value=16000, required=False)
    session_id = forms.CharField(max_length=200, required=False)
    below_floor = forms.BooleanField(required=False)

    def clean_strategy(self):
        return self.cleaned_data.get("strategy") or None


DEFAULT_CHAT_REQUEST = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Which editor should I use for this project?"},
    ],
}


class InjectionForm(forms.Form):
    """A chat request (OpenAI Chat or Responses JSON) and the model it asks for."""

    request_json = forms.CharField(widget=forms.Textarea(attrs={"rows": 9, "spellcheck": "false"}))
    session_id = forms.CharField(max_length=200, required=False)

    def clean_request_json(self):
        try:
            body = strictjson.loads(self.cleaned_data["request_json"])
        except ValueError:
            raise forms.ValidationError("Invalid JSON") from None
        if isinstance(body, list):
            body = {"messages": body}
        if not isinstance(body, dict):
            raise forms.ValidationError("Expected a chat request object or a list of messages.")
        conversation = body.get("messages") or body.get("input")
        if not conversation:
            raise forms.ValidationError('The request needs "messages" (or "input").')
        if not isinstance(body.get("model", ""), str):
            raise forms.ValidationError('"model" must be a string.')
        return body


class CompactForm(forms.Form):
    days = forms.IntegerField(min_value=1, max_value=365, initial=30)
    confirm = forms.BooleanField(required=False)


class ImportForm(forms.Form):
    file = forms.FileField()


class SettingsForm(SerializerForm):
    """The memory settings of ``PUT /api/settings/memory`` that the Settings page edits."""

    serializer_class = api.MemorySettingsSerializer

    enabled = forms.BooleanField(required=False)
    maxTokens = forms.IntegerField(min_value=0, max_value=16000)
    retentionDays = forms.IntegerField(min_value=1, max_value=365)
    strategy = forms.ChoiceField(choices=[(s, s) for s in conf.STRATEGIES])
    autoSummarize = forms.BooleanField(required=False)
    consolidationEnabled = forms.BooleanField(required=False)
    # The composite strategy's weights (one field each, sent as ``compositeWeights``) and half-life.
    # Optional: a page that does not post them leaves them as they are.
    compositeSemantic = forms.FloatField(required=False)
    compositeRecency = forms.FloatField(required=False)
    compositeImportance = forms.FloatField(required=False)
    recencyHalfLifeDays = forms.FloatField(required=False)
    WEIGHT_FIELDS = {
        "compositeSemantic": "semantic",
        "compositeRecency": "recency",
        "compositeImportance": "importance",
    }
    # The serializer's errors on the weights go beside the first weight field.
    field_map = {"compositeSemantic": "compositeWeights"}

    def __init__(self, *args, initial=None, **kwargs):
        if initial is not None and isinstance(initial.get("compositeWeights"), dict):
            weights = initial["compositeWeights"]
            initial = {**initial, **{f: weights.get(name) for f, name in self.WEIGHT_FIELDS.items()}}
        super().__init__(*args, initial=initial, **kwargs)

    def payload(self, data: dict) -> dict:
        data = {name: value for name, value in data.items() if value is not None}
        weights = {name: data.pop(f) for f, name in self.WEIGHT_FIELDS.items() if f in data}
        out = super().payload(data)
        if weights:
            out["compositeWeights"] = weights
        return out


class EngineSettingsForm(forms.Form):
    """One Engine-tab control: the subset of settings it posts is validated by the serializer."""

    FIELDS = (
        "embeddingSource",
        "embeddingProviderModel",
        "staticEnabled",
        "transformersEnabled",
        "transformersModel",
        "rerankEnabled",
        "rerankProviderModel",
    )
    BOOLEANS = ("staticEnabled", "transformersEnabled", "rerankEnabled")

    def __init__(self, data):
        super().__init__(data)
        self.changes: dict = {}

    def clean(self):
        raw = {}
        for name in self.FIELDS:
            if name not in self.data:
                continue
            value = self.data.get(name)
            raw[name] = value in ("true", "on", "1") if name in self.BOOLEANS else value
        if "rerankProvider" in self.data:
            provider = self.data.get("rerankProvider", "").strip()
            model = self.data.get("rerankModel", "").strip()
            raw["rerankProviderModel"] = f"{provider}/{model}" if provider and model else None
        if not raw:
            raise forms.ValidationError("Nothing to change.")
        serializer = api.MemorySettingsSerializer(data=raw)
        if not serializer.is_valid():
            raise forms.ValidationError([str(m) for m in _flat(serializer.errors)])
        self.changes = dict(serializer.validated_data)
        return {}


def add_domain_error(form: forms.Form, exc, *, fields: dict[str, str] | None = None) -> None:
    """Put a service's ``DomainError`` next to the form field it names (``details[0].field``).

    ``fields`` maps a service field (or its first part: ``config`` for ``config.url``) to the form's
    field; a field the form does not have gets the error at the top of the form, naming the field.
    """
    named = exc.details[0].get("field") if exc.details else None
    if not named:
        form.add_error(None, exc.message)
        return
    head = named.split(".", 1)[0].split("[", 1)[0]
    target = (
        (fields or {}).get(named) or (fields or {}).get(head) or (named if named in form.fields else None)
    )
    if target is None or target not in form.fields:
        form.add_error(None, f"{named}: {exc.message}")
    elif target == named:
        form.add_error(target, exc.message)
    else:
        form.add_error(target, f"{named}: {exc.message}")


class KeyCreateForm(forms.Form):
    """A new API key: its name, whether it may ask for the global scope, and where its memories live
    (the name rules and the provider's existence are the service's, ``key_create``)."""

    name = forms.CharField(
        max_length=200, widget=forms.TextInput(attrs={"placeholder": "e.g. billing-service"})
    )
    allow_global_scope = forms.BooleanField(required=False, label="May read every key's memories")
    provider = forms.CharField(required=False)


class ApiKeyChoiceField(forms.ModelMultipleChoiceField):
    """API keys by name and prefix (two keys may share a name)."""

    def label_from_instance(self, obj) -> str:
        return f"{obj.name} · {obj.prefix}…"


class TokenCreateForm(forms.Form):
    """A new management token: its name, its scope and the API keys it is bound to (none: global,
    which only an admin token may be; that rule and the name's are the service's, ``token_create``).
    Only active keys are offered: a token bound to a revoked key would reach nothing there. The
    queryset is lazy: each form reads the keys anew."""

    name = forms.CharField(max_length=200, widget=forms.TextInput(attrs={"placeholder": "e.g. ci-deploy"}))
    scope = forms.ChoiceField(
        choices=[
            (TokenScope.READ, "read · list and search memories"),
            (TokenScope.WRITE, "write · read, add, change and delete memories"),
            (TokenScope.ADMIN, "admin · write, settings, reindex (global when bound to no key)"),
        ],
        initial=TokenScope.READ,
    )
    owners = ApiKeyChoiceField(
        queryset=ApiKey.objects.filter(revoked_at__isnull=True).order_by("name", "created_at"),
        required=False,
        label="Bound to API keys",
        widget=forms.SelectMultiple(attrs={"size": 5}),
    )


class ProviderForm(forms.Form):
    """A memory provider: name, type and the type's configuration as a JSON object (checked by
    ``provider_save``, which names the wrong ``config.<field>``)."""

    name = forms.CharField(max_length=64, widget=forms.TextInput(attrs={"placeholder": "e.g. team-redis"}))
    type = forms.ChoiceField(choices=())
    config = JSONObjectTextField(
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 8, "spellcheck": "false", "data-json-object": "", "class": "mono"}
        ),
    )

    def __init__(self, *args, types: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["type"].choices = [(name, name) for name in types]

    def clean_config(self):
        value = self.cleaned_data["config"]
        if not isinstance(value, dict):
            raise forms.ValidationError("Must be a JSON object.")
        return value
