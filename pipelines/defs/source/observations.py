"""Which upstream commits are in the warehouse, as the UI shows them on `raw_snapshots`:
one observation per newly ingested commit, and the full list in each materialization."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.lib import ingest
from pipelines.lib.display import shorten
from pipelines.lib.metadata import bounded_json, markdown_preview

SHOWN_COMMITS = 100
# Dagster refuses an event tag value over 63 characters or outside this set (a CSV's sha256 has 64).
TAG_VALUE_MAX = 63
_NOT_TAG_TEXT = re.compile(r"[^A-Za-z0-9_.-]")


def tag_value(identifier: str) -> str:
    """`identifier` (a commit or content hash) as a tag value Dagster accepts; one too long keeps
    its first 12 characters, the prefix snapshot ids use."""
    value = _NOT_TAG_TEXT.sub("_", identifier)
    return value if len(value) <= TAG_VALUE_MAX else value[:12]


def _by_commit(metas: list[ingest.SnapshotMeta]) -> dict[str, list[ingest.SnapshotMeta]]:
    """Snapshots grouped by commit (or by content for plain files), oldest first."""
    grouped: dict[str, list[ingest.SnapshotMeta]] = defaultdict(list)
    for meta in sorted(metas, key=lambda m: (m.sequence, m.ingest_seq, m.source_file)):
        grouped[meta.commit or meta.content_sha256].append(meta)
    return grouped


def commit_observations(warehouse: Path, staged_ids: list[str]) -> list[dg.AssetObservation]:
    """One observation per commit that this run ingested, naming its files and row accounting."""
    new = set(staged_ids)
    observations = []
    for commit, metas in _by_commit([m for m in ingest.staged_metas(warehouse) if m.snapshot_id in new]).items():
        first = metas[0]
        observations.append(
            dg.AssetObservation(
                asset_key="raw_snapshots",
                # Upstream's subject and paths may be of any length: the instance keeps them on every run.
                description=f"ingested upstream {commit[:12]}: {shorten(first.subject or first.source_file)}",
                metadata={
                    "commit": commit,
                    "committed_at": first.committed_at or "",
                    "subject": shorten(first.subject or ""),
                    "files": dg.MetadataValue.json(bounded_json([m.source_file for m in metas])),
                    "rows": sum(m.row_count for m in metas),
                    "accepted": sum(m.accepted for m in metas),
                    "quarantined": sum(m.quarantined for m in metas),
                },
                tags={"upstream/commit": tag_value(commit)},
            )
        )
    return observations


def commits_in_warehouse(warehouse: Path) -> dict[str, dg.MetadataValue]:
    """The count and a newest-first table of every commit staged in the warehouse."""
    rows = [
        {
            "commit": commit[:12],
            "committed_at": metas[0].committed_at or "",
            "files": len(metas),
            "rows": sum(m.row_count for m in metas),
            "subject": metas[0].subject or "",
        }
        for commit, metas in _by_commit(ingest.staged_metas(warehouse)).items()
    ]
    table = pl.DataFrame(
        rows[::-1], schema={"commit": pl.String, "committed_at": pl.String, "files": pl.Int64, "rows": pl.Int64, "subject": pl.String}
    )
    return {
        "commits_in_warehouse": dg.MetadataValue.int(len(rows)),
        "commits": dg.MetadataValue.md(markdown_preview(table, rows=SHOWN_COMMITS)),
    }
