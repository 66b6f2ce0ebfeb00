"""The contract every vector store implements."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np


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
    """A store of one vector per memory, searchable per owner.

    Implementations must never return a memory of an owner that was not
    asked for, and must make ``upsert`` idempotent (a second upsert of the
    same ``seq`` replaces the vector).
    """

    name = "base"

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

    def search(self, *, owner_ids: Sequence[str], vector: np.ndarray, k: int) -> list[VectorHit]:
        """The ``k`` nearest vectors among ``owner_ids``' memories, best first."""
        raise NotImplementedError

    def signature(self) -> str | None:
        """The embedding signature the stored vectors were made with (None = empty store)."""
        raise NotImplementedError

    def full_signature(self, signature: str) -> str:
        """``signature`` as this store records it (a quantised store may add a suffix)."""
        return signature

    def count(self) -> int:
        """How many vectors are stored (0 when the store is not built)."""
        raise NotImplementedError
