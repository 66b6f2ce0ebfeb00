"""Domain errors raised by services and selectors; the API maps each to one envelope."""

from __future__ import annotations


class DomainError(Exception):
    """Base class. ``status`` and ``type`` drive the JSON error envelope."""

    status = 400
    type = "invalid_request_error"

    def __init__(
        self, message: str, *, field: str | None = None, details: list[dict[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or ([{"field": field, "message": message}] if field else [])


class ValidationFailed(DomainError):
    status = 400


class NotFound(DomainError):
    status = 404
    type = "not_found_error"


class PermissionDenied(DomainError):
    status = 403
    type = "permission_error"


class Conflict(DomainError):
    status = 409
    type = "conflict_error"


class Unavailable(DomainError):
    status = 503
    type = "service_unavailable_error"
