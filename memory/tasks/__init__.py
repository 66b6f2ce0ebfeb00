"""Huey tasks (djhuey autodiscovers ``memory.tasks``): thin wrappers that take ids
and call services. One module per area."""

from memory.tasks import consolidation, drain, extraction, indexing, lifecycle, qdrant, replay  # noqa: F401
