"""Canonical JSON, digests and slugs (SPEC section 2)."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any

_NON_SLUG = re.compile(r"[^a-z0-9]+")
_NON_SLUG_KEEP_UNDERSCORE = re.compile(r"[^a-z0-9_]+")

NAME_MAX_CHARS = 100


def canonical_json(value: Any) -> str:
    """Keys sorted, no whitespace, UTF-8 text, integers as integers."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def digest(value: Any) -> str:
    """Lowercase hex sha256 of the canonical JSON of `value`."""
    return digest_of_canonical(canonical_json(value))


def digest_of_canonical(text: str) -> str:
    """`digest` of the value whose canonical JSON is `text`, for a caller that has encoded it already."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def slug(text: str) -> str:
    return _NON_SLUG.sub("-", text.lower()).strip("-")


@functools.lru_cache(maxsize=4096)
def slug_keep_underscore(text: str) -> str:
    # Cached: a workload's parameter names and most of its values repeat across thousands of distinct workloads.
    return _NON_SLUG_KEEP_UNDERSCORE.sub("-", text.lower()).strip("-")


def benchmark_name(kernel: str, pass_: str, metric: str) -> str:
    return f"{kernel}/{pass_}" if metric == "speed" else f"{kernel}/{pass_}/{metric}"


def prefixed(hex_digest: str) -> str:
    return f"sha256:{hex_digest}"
