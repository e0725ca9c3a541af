"""Where snapshots come from: a git repository (URL, clone or bundle), a CSV file, or a CSV URL.

The kinds are told apart in source_address and read by source_git and
source_csv; source_types holds what every source lists and raises, and
source_retry how its network steps are retried.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.ingest.source_address import classify
from pipelines.ingest.source_csv import CsvSource
from pipelines.ingest.source_git import GitSource
from pipelines.ingest.source_streams import GitStreams

Source = GitSource | GitStreams | CsvSource


def open_source(source: str, cache_dir: Path, branch: str, file_glob: str) -> Source:
    kind = classify(source)
    if kind == "git":
        return GitSource(source, cache_dir, branch, file_glob)
    return CsvSource(source, is_url=kind == "csv-url", cache_dir=cache_dir)
