"""Property-based tests of the parser and normalizer (SPEC section 5: nothing is lost): a history of
snapshots of one file, rows staying, going and coming back, assembles to one run per key, with the
first and last snapshot that held it and whether the latest one does.

Examples per property: the profiles registered in `generated_csv`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import HEADER
from generated_csv import COLUMNS, PROFILE, RUN_KEY, Row, row_line, rows
from hypothesis import given, settings
from hypothesis import strategies as st
from robustness_tally import trial
from snapshot_oracle import RAW_FIELD, assemble_and_check, scratch, stage

pytest_plugins = ["robustness_report"]


@st.composite
def histories(draw) -> list[list[Row]]:
    """Versions of one file, oldest first, drawn from one pool of rows: rows stay, go, come back."""
    pool = draw(st.lists(rows(), min_size=1, max_size=8))
    return [
        [pool[i] for i in draw(st.lists(st.sampled_from(range(len(pool))), unique=True, max_size=8))]
        for _ in range(draw(st.integers(1, 4)))
    ]


def run_key(values: dict[str, str]) -> tuple[str, ...]:
    return tuple(values[c] for c in RUN_KEY)


@pytest.mark.slow
@settings(PROFILE)
@given(histories())
def test_a_history_of_snapshots_gives_one_run_per_key_with_its_provenance(versions: list[list[Row]]):
    with trial("generated input", "history of snapshots of one file"), scratch() as folder:
        warehouse = Path(folder)
        seen: dict[tuple[str, ...], list[str]] = {}
        for sequence, version in enumerate(versions, 1):
            lines = [HEADER] + [
                row_line(row, list(COLUMNS), always_quote=False).decode("utf-8", errors="surrogateescape") for row in version
            ]
            data = "\n".join(lines).encode("utf-8", errors="surrogateescape") + b"\n"
            meta = stage(warehouse, data, snapshot=f"c{sequence}", sequence=sequence)
            assert (meta.row_count, meta.accepted) == (len(version), sum(r.expect == "accept" for r in version))
            for row in version:
                if row.expect == "accept":
                    seen.setdefault(run_key(row.values), []).append(meta.snapshot_id)
        frames = assemble_and_check(warehouse)
        runs = frames["runs"]
        assert runs.height == len(seen)
        latest = frames["snapshots"]["snapshot_id"][-1]
        for run in runs.iter_rows(named=True):
            key = tuple(run[RAW_FIELD[c]] for c in RUN_KEY)
            assert (run["first_seen_snapshot"], run["last_seen_snapshot"]) == (seen[key][0], seen[key][-1])
            assert run["in_latest"] == (latest in seen[key])
