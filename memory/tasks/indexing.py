"""Huey tasks for vectors: per-write embedding and the reindex drain."""

import logging

from huey.contrib.djhuey import db_task

from memory.services import indexing

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
