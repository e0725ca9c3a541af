"""Which backend a file's runs were written for (SPEC section 4), and what a CI folder's name says (SPEC section 7)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

DEFAULT_BACKEND = "triton"
# The backends upstream's scripts name in a file's suffix (LIGER_BENCH_TARGET: `all_benchmark_data_cutile.csv`).
KNOWN_BACKENDS = ("cutile", "cutedsl")
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


def contender_backend(file_name: str) -> str:
    """The backend of a contender file a user names as they like (`slow_kl.csv`, `benchmark_pr1234.csv`): upstream's
    `all_benchmark_data_<suffix>.csv` as `backend_of` reads it, a known backend's suffix (`_cutile`, `_cutedsl`,
    KNOWN_BACKENDS), else `triton`; the text after any other underscore is a user's word, not a backend."""
    stem = PurePosixPath(file_name).stem.strip().lower()
    if stem == _DATA_STEM or stem.startswith(f"{_DATA_STEM}_"):
        return backend_of(PurePosixPath(file_name).name.lower(), "file")
    suffix = stem.rpartition("_")[2] if "_" in stem else ""
    return suffix if suffix in KNOWN_BACKENDS else DEFAULT_BACKEND
