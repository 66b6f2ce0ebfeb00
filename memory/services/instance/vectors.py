"""The vectors of a move: copied with their signature, or left for the target to re-embed.

The export carries every vector the database store holds (``VectorStore.owner_vectors``, owner by
owner) with the signature they were made with. The import copies them as they are when the target
would make the same vectors (the same source, model, dimension and element type: the signatures
match), which spares it the re-embedding of every memory (docs/operations.md has the figures);
otherwise it writes none and marks every memory ``needs_reindex``, and the reindex queue re-embeds
them with the target's own model. Sealed memories (encryption at rest) cannot be re-embedded (their
content is a blind index): only a copy keeps their vectors.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory.models import HEALTH_PROBE_ID, ApiKey, Memory
from memory.services import vectorsync
from memory.services.indexing import vector_context
from memory.services.instance.archive import VectorsEntry
from memory.services.instance.tables import Tally
from memory.vectorstores.base import VectorItem, VectorStore
from memory.vectorstores.registry import database_choice

UNCHECKED: tuple[str, ...] = ()


def _owners() -> list[uuid.UUID]:
    return list(ApiKey._base_manager.exclude(pk=HEALTH_PROBE_ID).order_by("pk").values_list("pk", flat=True))


def source_store() -> VectorStore | None:
    """The database store when it holds vectors it can list, else None (the export carries none)."""
    store = database_choice().store
    if store is None or store.signature() is None:
        return None
    return store


def vector_lines(store: VectorStore) -> Iterator[dict[str, Any]]:
    """Each stored vector of a memory that travels, as a line: owner, seq and the float32 bytes in
    base64. Held in memory one owner at a time. Raises ``LookupError`` when the store cannot list
    its vectors (then nothing is carried)."""
    for owner in _owners():
        found = store.owner_vectors(owner)
        if found is None:
            raise LookupError(f"the {store.name} store cannot list its vectors")
        seqs, matrix = found
        wanted = set(Memory._base_manager.filter(owner_id=owner).values_list("seq", flat=True))
        for i in np.argsort(seqs, kind="stable"):
            seq = int(seqs[i])
            if seq in wanted:
                vector = np.asarray(matrix[i], dtype=np.float32).tobytes()
                yield {"owner": str(owner), "seq": seq, "vector": base64.b64encode(vector).decode()}


def stored_tally(store: VectorStore | None) -> Tally:
    """The count and checksum of the vectors this database holds for the memories that travel."""
    tally = Tally(unchecked=UNCHECKED)
    if store is not None and store.signature() is not None:
        for line in vector_lines(store):
            tally.add(line)
    return tally


@dataclass(frozen=True)
class VectorPlan:
    """What the import does with the vectors: ``carry`` them (written as they are) or not (every
    memory marked ``needs_reindex``), and why, in words."""

    carry: bool
    reason: str


def plan_for(entry: VectorsEntry | None) -> VectorPlan:
    if entry is None:
        return VectorPlan(False, "the export carries no vectors")
    ctx = vector_context()
    if ctx.write_store is None:
        return VectorPlan(
            False, f"this database has no vector store ({ctx.reason or 'sqlite-vec not loaded'})"
        )
    if ctx.source is None:
        return VectorPlan(False, f"this instance has no embedding source ({ctx.reason})")
    expected = ctx.write_store.full_signature(ctx.source.signature)
    if expected != entry.signature:
        return VectorPlan(
            False, f"this instance makes {expected} vectors; the export's were made with {entry.signature}"
        )
    return VectorPlan(True, f"the {entry.rows} vectors of {entry.signature} are copied as they are")


def prepare(entry: VectorsEntry) -> None:
    """Build the target's vector table for the export's signature (before any memory is written: a
    rebuild marks every memory for re-embedding)."""
    ctx = vector_context()
    assert ctx.write_store is not None and ctx.source is not None  # plan_for said carry
    ctx.write_store.ensure(signature=ctx.source.signature, dim=entry.dim)


def write(lines: list[dict[str, Any]]) -> int:
    """Store these vectors in every active index (an upsert: a batch written twice is harmless)."""
    ctx = vector_context()
    items = [
        VectorItem(
            seq=int(line["seq"]),
            owner_id=str(line["owner"]),
            vector=np.frombuffer(base64.b64decode(line["vector"]), dtype=np.float32),
        )
        for line in lines
    ]
    return vectorsync.write(
        items, database=ctx.write_store, signature=ctx.live_source().signature, mark=lambda: len(items)
    )


def target_store() -> VectorStore | None:
    return vector_context().write_store
