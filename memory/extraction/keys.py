"""Key derivation for extracted facts: ``category:slug``.

The key is what makes a repeated fact an upsert instead of a new row (the store is unique on
``(owner, key)``), so its derivation is a compatibility contract with the original (its ``factKey``):

* ``slug = content.lower()``, every run of characters outside ``[a-z0-9]`` becomes one ``_``,
  the first 40 characters are kept, then trailing ``_`` are stripped (a leading ``_`` is kept).
  Non-ASCII letters therefore become ``_`` (``naïve`` → ``na_ve``).
* Negative polarity (a dislike, a "never" habit) gets the marker ``not:`` between the category and the
  slug: ``preference:not:javascript_callbacks``. A slug never contains ``:``, so a negative key can never
  collide with a positive one, and the opposite key of a fact is derived without re-parsing its content
  (see :func:`opposite_key`), which is what contradiction detection needs.
* A phrase without a single ASCII letter or digit (``I love 東京タワー``) would get the empty slug in the
  original, so every such fact of a category shared one key and overwrote each other. Those get a
  short stable hash of the lower-cased phrase instead.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_SLUG_LENGTH", "NEGATIVE_MARKER", "fact_key", "opposite_key", "slugify"]

MAX_SLUG_LENGTH = 40
NEGATIVE_MARKER = "not:"

_NON_SLUG_RUN = re.compile(r"[^a-z0-9]+")
_HASH_DIGEST_SIZE = 6  # 12 hex characters: collisions are irrelevant at one owner's fact count


def slugify(content: str) -> str:
    """Return the slug of ``content`` as the original's ``factKey`` derives it (at most 40 characters, maybe empty).

    ``str.lower`` follows the same Unicode default case mapping as JavaScript's ``toLowerCase``, so the
    ASCII result is the same (``"K"`` (Kelvin sign) → ``"k"``, ``"İ"`` → ``"i"`` + combining dot → ``"i_"``).
    """
    return _NON_SLUG_RUN.sub("_", content.lower())[:MAX_SLUG_LENGTH].rstrip("_")


def fact_key(category: str, content: str, *, negative: bool = False) -> str:
    """Return the upsert key ``"<category>:<slug>"`` (``"<category>:not:<slug>"`` when ``negative``).

    ``content`` is the phrase the fact is about (for a negative fact: the disliked thing, not the
    labelled content). The slug part is never empty: a phrase without any ASCII letter or digit gets a
    12-hex-digit hash of its lower-cased text instead.
    """
    slug = slugify(content)
    if not slug:
        digest = hashlib.blake2s(
            content.lower().encode("utf-8", "surrogatepass"), digest_size=_HASH_DIGEST_SIZE
        )
        slug = digest.hexdigest()
    marker = NEGATIVE_MARKER if negative else ""
    return f"{category}:{marker}{slug}"


def opposite_key(key: str) -> str:
    """Return the key of the same fact with the opposite polarity.

    ``preference:cats`` ↔ ``preference:not:cats``. A key without a ``category:`` part is returned
    unchanged (it was not made by :func:`fact_key`).
    """
    category, sep, rest = key.partition(":")
    if not sep:
        return key
    if rest.startswith(NEGATIVE_MARKER):
        return f"{category}:{rest[len(NEGATIVE_MARKER) :]}"
    return f"{category}:{NEGATIVE_MARKER}{rest}"
