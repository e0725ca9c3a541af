"""Text from the data, bounded before it reaches a page, a picture, a file name or Dagster's metadata.

Upstream's fields have no length limit: one kernel name, GPU name, label or config of
megabytes must not become a file name (file systems allow 255 bytes), a picture laid out
around it, or a copy in every metadata entry the Dagster instance keeps forever. What is
shown is cut with an ellipsis (`shorten`); what names a file is a short slug, with a hash
of the whole text when the slug was cut or is shared with another key (`file_names`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from pipelines.core import canonical

ELLIPSIS = "…"
TEXT_MAX = 1000  # a value in a page's table or in Dagster's metadata
SLUG_MAX = 64  # the slug kept in a file name, before `-<hash>`
HASH_CHARS = 10
NAME_MAX_BYTES = SLUG_MAX + 1 + HASH_CHARS


def shorten(text: str, limit: int = TEXT_MAX) -> str:
    """`text` when it has at most `limit` characters, else its first `limit - 1` and an ellipsis."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def short_hash(text: str) -> str:
    """The first hex digits of the sha256 of the whole text: what tells two cut names apart."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]


def file_names(keys: Iterable[str], keep_underscore: bool = False) -> dict[str, str]:
    """Key -> a file-safe name (ASCII, at most NAME_MAX_BYTES), distinct for distinct keys.

    A key's name is its slug when the slug is not empty, at most SLUG_MAX characters and no
    other key of `keys` slugs alike; otherwise the slug cut to SLUG_MAX, `-` and the first
    HASH_CHARS hex digits of the key's sha256 (the hash alone for an empty slug). The rule
    depends only on the set of keys, not on their order, so a name is the same on every run
    while the same keys are there.
    """
    to_slug = canonical.slug_keep_underscore if keep_underscore else canonical.slug
    unique = list(dict.fromkeys(keys))
    slugs = {key: to_slug(key) for key in unique}
    shared = Counter(slugs.values())

    def hashed(key: str) -> str:
        cut = slugs[key][:SLUG_MAX].rstrip("-_")
        return f"{cut}-{short_hash(key)}" if cut else short_hash(key)

    names = {key: s if s and len(s) <= SLUG_MAX and shared[s] == 1 else hashed(key) for key, s in slugs.items()}
    # A plain slug can look like another key's hashed name: then it takes its own hash too.
    while True:
        taken = Counter(names.values())
        clashing = [key for key, name in names.items() if taken[name] > 1 and name == slugs[key]]
        if not clashing:
            break
        names.update({key: hashed(key) for key in clashing})
    if len(set(names.values())) < len(names):
        raise ValueError("two keys share the first digits of their sha256: no distinct file names")  # never seen
    return names
