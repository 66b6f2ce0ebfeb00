"""Huey tasks for vectors: per-write embedding, the reindex drain, the sweep of the mirrors."""

import logging

from huey.contrib.djhuey import db_task

from memory.services import indexing, vectorsync

logger = logging.getLogger("memory.tasks")


@db_task(retries=2, retry_delay=2)
def index_memories_task(seqs: list[int]) -> int:
    logger.info("index_memories start: %s memories", len(seqs))
    done = indexing.index_by_seqs(seqs)
    logger.info("index_memories end: %s indexed", done)
    return done


@db_task(retries=1, retry_delay=5)
def reindex_task() -> dict:
    logger.info("reindex start: %s pending", indexing.reindex_needed(indexing.vector_context()))
    result = indexing.reindex_all()
    logger.info("reindex end: %s", result)
    return result


@db_task(retries=1, retry_delay=60)
def sweep_mirrors_task() -> dict:
    """Remove from the mirrors (Qdrant) the vectors of memories that are gone, expired or past
    retention: scheduled when a mirror missed a delete."""
    result = vectorsync.sweep_mirrors()
    logger.info("sweep of the mirrors end: %s", result)
    return result
