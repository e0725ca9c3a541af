"""Where snapshots come from: a git repository (URL, clone or bundle), a CSV file, or a CSV URL.

The kinds are told apart in `address` and read by `git_source` and
`csv_source`; `listing` holds what every source lists and raises, `retry`
how its network steps are retried.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.ingest.source.address import classify
from pipelines.ingest.source.csv_source import CsvSource
from pipelines.ingest.source.git_source import GitSource
from pipelines.ingest.source.listing import Listing
from pipelines.ingest.source.streams import GitStreams

Source = GitSource | GitStreams | CsvSource
# What other stages may use (tests/core/test_layers.py holds every stage to its neighbours' __all__).
__all__ = ["Listing", "Source", "open_source"]


def open_source(source: str, cache_dir: Path, branch: str, file_glob: str) -> Source:
    kind = classify(source)
    if kind == "git":
        return GitSource(source, cache_dir, branch, file_glob)
    return CsvSource(source, is_url=kind == "csv-url", cache_dir=cache_dir)
