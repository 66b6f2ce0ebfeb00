"""Cognitive memory, rule-based and local: importance, category and entities of a memory
(:func:`analyse`), and whether a new memory supersedes or contradicts an old one (:func:`check`).
The rules, the signals and their measured figures are in ``docs/cognitive.md``."""

from memory.cognitive.analysis import MemoryAnalysis, analyse
from memory.cognitive.contradiction import Statement, Verdict, check
from memory.cognitive.entities import Entity

__all__ = ["Entity", "MemoryAnalysis", "Statement", "Verdict", "analyse", "check"]
