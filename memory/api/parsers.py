"""A JSON parser that bounds the body size and rejects what ``json`` lets through, and the request class
that lets it see a body sent without ``Content-Length``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import exceptions, parsers
from rest_framework.request import Request

from memory import strictjson


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "Request body too large"
    default_code = "payload_too_large"


class BodyRequest(Request):
    """DRF's request, reading a body sent without ``Content-Length`` (``Transfer-Encoding: chunked``).

    DRF takes a missing length for no body: such a request's JSON was ignored whole (a ``PUT`` of
    settings answered 200 and changed nothing). Django's ``request.body``, which DRF's JSON parsing
    reads, still applies ``DATA_UPLOAD_MAX_MEMORY_SIZE`` to what was really sent (a 413)."""

    def _load_stream(self) -> None:
        super()._load_stream()  # type: ignore[misc]  # DRF's own hook, absent from its stubs
        if self._stream is None and "HTTP_TRANSFER_ENCODING" in self._request.META:
            self._stream = self._request


class BoundedJSONParser(parsers.JSONParser):
    """Reads at most ``OMNIROUTE_MAX_BODY_BYTES`` (413 beyond); refuses NaN/Infinity, numbers that overflow
    a double, lone surrogates and nesting beyond ``strictjson.MAX_DEPTH``, naming the field (a 400).

    DRF reads the raw stream, which bypasses Django's DATA_UPLOAD_MAX_MEMORY_SIZE,
    so the limit is enforced here.
    """

    def parse(
        self,
        stream: IO[Any] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        limit = settings.OMNIROUTE_MAX_BODY_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"Request body exceeds {limit} bytes")
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"Request body exceeds {limit} bytes")
        if not raw.strip():
            return {}
        try:
            return strictjson.loads(raw.decode("utf-8"))
        except strictjson.NumberOutOfRange as exc:
            if exc.field:
                raise exceptions.ValidationError({exc.field: [f"The number {exc.text} is out of range."]})
            raise exceptions.ParseError(f"Invalid JSON body: {exc}") from None
        except (strictjson.LoneSurrogate, strictjson.NestingTooDeep) as exc:
            if exc.field:
                raise exceptions.ValidationError({exc.field: [exc.reason]})
            raise exceptions.ParseError(f"Invalid JSON body: {exc.reason}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise exceptions.ParseError(f"Invalid JSON body: {exc}") from None
