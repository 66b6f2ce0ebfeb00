"""Studio forms. Field rules come from the REST serializers (one source of validation):
each form parses HTML input, then runs the serializer the API uses and puts its
errors next to the matching field."""

from __future__ import annotations

import json

from django import forms
from rest_framework import serializers

from memory import conf, strictjson
from memory.api import serializers as api
from memory.models import MemoryType

STRATEGY_LABELS = {
    "exact": "Recent (newest first)",
    "keyword": "Keyword (FTS5 bm25)",
    "semantic": "Semantic (vector)",
    "hybrid": "Hybrid (keywords + meaning)",
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
    """Add (type, key, content) and inline edit (plus metadata). The Studio asks for a key,
    as the original did; the API also accepts keyless memories."""

    serializer_class = api.MemoryCreateSerializer

    type = forms.ChoiceField(choices=MemoryType.choices, initial=MemoryType.FACTUAL)
    key = forms.CharField(
        max_length=255, widget=forms.TextInput(attrs={"placeholder": "e.g. user.preferences.theme"})
    )
    content = forms.CharField(strip=False, widget=forms.Textarea(attrs={"rows": 3}))
    metadata = JSONObjectTextField(
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 4, "spellcheck": "false", "data-json-object": "", "class": "mono"}
        ),
    )

    def __init__(self, *args, with_metadata: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if not with_metadata:
            del self.fields["metadata"]

    @classmethod
    def for_memory(cls, memory, data=None) -> MemoryForm:
        initial = {
            "type": memory.type,
            "key": memory.key or "",
            "content": memory.content,
            "metadata": json.dumps(memory.metadata or {}, indent=2, ensure_ascii=False),
        }
        form = cls(data, initial=initial, with_metadata=True)
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
