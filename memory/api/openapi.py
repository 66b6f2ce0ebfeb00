"""The schema generator of the API's views: drf-spectacular's, writing down the input rules of our
serializers that it cannot see, so that a request valid per ``/api/schema/`` is one the API accepts
and an invalid one is refused (``tests/hardening/test_schemathesis.py`` checks both ways).

* a :class:`~memory.api.serializers.StrictSerializer` refuses undeclared fields: its request body says
  ``additionalProperties: false``, plus what its ``schema_extra`` adds (``minProperties``, which also
  makes the body itself required);
* a text field refuses NUL characters, and most refuse blanks after trimming (memory content, blanks
  at all): ``minLength`` cannot say so, a ``pattern`` can;
* a :class:`~memory.api.serializers.RawListField` (bulk items) has its bounds;
* every operation documents the errors that do not depend on it: 401, 403, 429 (the failure
  throttle), 503, and 400 and 413 for a body (:data:`BODY_METHODS`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import Direction
from rest_framework import serializers

from memory.api.responses import errors
from memory.api.serializers import ContentField, RawListField, StrictSerializer

# Not empty: drf-spectacular offers "" as a oneOf branch of its own where a field allows blanks.
NO_NUL = r"^[^\x00]+$"
# And one character that Python's ``str.strip()`` keeps: not ECMA-262 whitespace (``\s``), nor the
# separators Python also strips (U+001C–U+001F, U+0085).
NOT_BLANK_NO_NUL = r"^[^\x00]*[^\s\x00\x1c-\x1f\x85][^\x00]*$"


# Every body is read by memory.api.parsers.BoundedJSONParser: it can be malformed (400) or too large (413).
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class MemoryAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction: Direction = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        # What any route may answer besides its own errors: 401/403 (every route is authenticated), 429
        # (authentication failures throttled), 503 (the database stayed locked past the request's
        # deadline), and for a body, 400 and 413.
        codes = {401, 403, 429, 503} | ({400, 413} if self.method in BODY_METHODS else set())
        for code, response in errors(*codes).items():
            if str(code) not in responses:
                responses[str(code)] = self._get_response_for_code(response, str(code), direction=direction)
        return dict(sorted(responses.items()))

    def _map_serializer(
        self, serializer: serializers.BaseSerializer, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and isinstance(serializer, StrictSerializer):
            schema["additionalProperties"] = False
            schema.update(getattr(serializer, "schema_extra", {}))
        return schema

    def _get_request_for_media_type(
        self, serializer: Any, direction: str = "request"
    ) -> tuple[dict[str, Any] | None, bool]:
        schema, required = super()._get_request_for_media_type(serializer, direction)
        # A body that needs a property cannot be left out either ({} is what no body reads as).
        return schema, required or getattr(serializer, "schema_extra", {}).get("minProperties", 0) > 0

    def _map_serializer_field(
        self, field: serializers.Field, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction != "request":
            return schema
        if (
            isinstance(field, serializers.CharField)
            and schema.get("type") == "string"
            and "pattern" not in schema
        ):
            # Every CharField refuses NUL (ProhibitNullCharactersValidator); most refuse blanks after
            # trimming, and memory content blanks at all.
            blank = field.allow_blank or not (field.trim_whitespace or isinstance(field, ContentField))
            schema["pattern"] = NO_NUL if blank else NOT_BLANK_NO_NUL
        if isinstance(field, RawListField):
            schema.update(minItems=1, maxItems=field.max_length)
        return schema
