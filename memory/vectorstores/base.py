"""The contract every vector store implements."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from memory.visibility import Visibility


@dataclass(frozen=True)
class VectorHit:
    """One KNN result: the memory's integer pk and its cosine similarity (-1..1)."""

    seq: int
    score: float


@dataclass(frozen=True)
class VectorItem:
    seq: int
    owner_id: str
    vector: np.ndarray


class VectorStore:
    """A store of one vector per memory, searchable under a :class:`~memory.visibility.Visibility`.

    Implementations must never return a memory that the visibility hides (another owner's, an expired
    one, another session's, one older than the retention window), and must make ``upsert`` idempotent
    (a second upsert of the same ``seq`` replaces the vector).

    Writes reach a store through :mod:`memory.services.vectorsync` only, which fans every write and
    delete out to each active store; nothing else names a concrete store.
    """

    name = "base"
    # True: the vectors live in the SQLite database; they are written inside the caller's transaction
    # and go with their rows whatever deletes them (a trigger), and searches read the filter columns
    # from the rows. False: a mirror elsewhere (a server), written after commit, best effort, which
    # keeps its own copy of the filter fields (see ``refresh``) and may lag behind the rows.
    in_database = False

    def ensure(self, *, signature: str, dim: int) -> bool:
        """Make the store ready for vectors of ``signature``/``dim``.

        Returns True when the store was (re)built, which means every stored
        vector is gone and every memory must be re-embedded.
        """
        raise NotImplementedError

    def upsert(self, items: Sequence[VectorItem], *, new: bool = False) -> None:
        """Insert or replace the vectors of ``items`` (``new``: none exists yet, a hint)."""
        raise NotImplementedError

    def delete(self, seqs: Iterable[int]) -> None:
        """Remove the vectors of ``seqs``; unknown ids are ignored."""
        raise NotImplementedError

    def refresh(self, seqs: Iterable[int]) -> int:
        """The filter fields (session, expiry) of these memories changed but not their content: make
        searches see the new values without re-embedding. Returns how many memories were refreshed.
        The default does nothing: a store that reads the fields from the rows is always current."""
        return 0

    def search(self, *, vector: np.ndarray, k: int, visibility: Visibility) -> list[VectorHit]:
        """The ``k`` nearest vectors among the memories ``visibility`` shows, best first.

        ``k`` counts visible memories only: a nearer hidden memory never takes a place. An empty
        owner set finds nothing; ``owner_ids=None`` searches every owner.
        """
        raise NotImplementedError

    def signature(self) -> str | None:
        """The embedding signature the stored vectors were made with (None = empty store)."""
        raise NotImplementedError

    def owner_vectors(self, owner_id: uuid.UUID | str) -> tuple[np.ndarray, np.ndarray] | None:
        """Every stored vector of one owner's memories, as ``(seqs, matrix)``: int64 ids and float32
        rows in the same order, whatever the rows' visibility (callers filter by ``seq``). Reads
        only; nothing is embedded. None: this store cannot list an owner's vectors (the default; a
        mirror, which the database store's copy makes unnecessary)."""
        return None

    def full_signature(self, signature: str) -> str:
        """``signature`` as this store records it (a quantised store may add a suffix)."""
        return signature

    def count(self) -> int:
        """How many vectors are stored (0 when the store is not built)."""
        raise NotImplementedError

    def backfill(self, *, retention_days: int | None) -> dict | None:
        """Write the vectors of the visible memories the store is missing (a mirror that missed writes,
        a new collection); memories older than ``retention_days`` are skipped. Returns what it did,
        ``{upserted, errors, reason}``. Default None: the reindex queue (``needs_reindex``) fills the
        store itself."""
        return None

    def sweep(self, *, retention_days: int) -> int:
        """Remove the vectors of memories that are gone, expired, or older than ``retention_days``;
        returns how many were removed. Default 0: vectors that go with their rows leave nothing."""
        return 0

    def note_failure(self, exc: BaseException) -> str:
        """Record that a call to this store failed and describe it for a log line (never a secret).
        A mirror that failed is left out of writes and searches for a while (the registry)."""
        return str(exc)
