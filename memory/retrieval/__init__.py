"""Retrieval: strategies, tiers, ranking and the token budget (pure parts and the engine)."""
