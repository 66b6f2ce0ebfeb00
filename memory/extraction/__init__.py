"""Rule-based fact extraction (pure functions, no Django): text in, :class:`Fact` list out."""

from memory.extraction.keys import fact_key, opposite_key, slugify
from memory.extraction.rules import (
    FACT_SOURCES,
    MAX_EXTRACTION_TEXT_LENGTH,
    MAX_FACT_LENGTH,
    MIN_FACT_LENGTH,
    REGISTRY,
    Fact,
    Polarity,
    Rule,
    RuleFamily,
    extract_facts,
)

__all__ = [
    "FACT_SOURCES",
    "MAX_EXTRACTION_TEXT_LENGTH",
    "MAX_FACT_LENGTH",
    "MIN_FACT_LENGTH",
    "REGISTRY",
    "Fact",
    "Polarity",
    "Rule",
    "RuleFamily",
    "extract_facts",
    "fact_key",
    "opposite_key",
    "slugify",
]
