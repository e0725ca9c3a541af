"""Which backend a file's runs were written for (SPEC section 4), and what a CI folder's name says (SPEC section 7)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

DEFAULT_BACKEND = "triton"
# Upstream's data files: `all_benchmark_data.csv` is the Triton build's, `all_benchmark_data_<target>.csv`
# another LIGER_BENCH_TARGET's (cutile, cutedsl).
_DATA_STEM = "all_benchmark_data"
# A CI folder: `benchmarks/<abbreviated commit>` or `benchmarks/<commit>-v<release>` for a release.
_CI_FOLDER = re.compile(r"^(?P<commit>[0-9a-f]{7,40})(?:-v(?P<release>[0-9][0-9A-Za-z.+-]*))?$")


def backend_of(source_file: str, stream: str) -> str:
    """The backend of the runs of `source_file`: `triton` for upstream's main file and every CI file, the suffix of
    `all_benchmark_data_<suffix>.csv`, the text after the last `_` of any other file's stem, else `triton`."""
    if stream == "ci":
        return DEFAULT_BACKEND
    stem = PurePosixPath(source_file).stem
    if stem.startswith(f"{_DATA_STEM}_"):
        suffix = stem[len(_DATA_STEM) + 1 :]
    elif stem == _DATA_STEM:
        return DEFAULT_BACKEND
    else:
        suffix = stem.rpartition("_")[2] if "_" in stem else ""
    suffix = suffix.strip().lower()
    return suffix or DEFAULT_BACKEND


def ci_folder(source_file: str) -> tuple[str | None, str | None]:
    """(benchmarked commit, release) named by the folder that holds a CI file; (None, None) when the folder
    is not named so."""
    parts = PurePosixPath(source_file).parts
    if len(parts) < 2:
        return None, None
    match = _CI_FOLDER.match(parts[-2])
    if not match:
        return None, None
    return match["commit"], match["release"]
