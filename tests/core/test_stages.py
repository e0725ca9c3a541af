"""The registry of stages (pipelines/stages.py) is whole and true: it names every table, statistic, check and SQL
file the code has, each entry function exists, and the code versions it generates count what changes the data
(a rule, a format version, a computing library's version) and nothing that only logs or words a message."""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import replace
from pathlib import Path

import pytest

from pipelines import stages
from pipelines.core import code_version, schemas, sql_files
from pipelines.defs.builds import checks
from pipelines.statistics import db, lineage


def all_versions() -> dict[str, str]:
    return {name: stages.code_version(name) for name in stages.STAGES}


def with_module(monkeypatch, tmp_path: Path, module: str, addition: str) -> None:
    known = code_version.modules()
    copy = tmp_path / f"{module}.py"
    copy.write_text(known[module].read_text() + addition)
    monkeypatch.setattr(code_version, "modules", lambda root=code_version.PACKAGE: {**known, module: copy})


def test_the_registry_names_what_the_code_has():
    assert tuple(schemas.TABLES) == stages.TABLES
    assert set(stages.SQL_CHECKS) == set(db.CHECKS)
    assert {*stages.SERIES_STATISTICS, *stages.SQL_STATISTICS} == set(db.STATISTICS)
    assert set(stages.SERIES_STATISTICS) == set(db.SERIES_STATISTICS)
    assert stages.STATISTICS_MORE_SQL == db.STORED_ORDER
    outputs = [asset for stage in stages.STAGES.values() for asset in stage.outputs]
    assert len(outputs) == len(set(outputs)), "an asset is the output of two stages"
    listed_sql = {name for stage in stages.STAGES.values() for name in stage.sql}
    assert listed_sql <= set(sql_files.names())
    assert set(sql_files.names("report")) <= listed_sql and set(sql_files.names("series")) <= listed_sql
    assert {f"views/{name.removeprefix('views/')}" for name in sql_files.names("views")} <= listed_sql


def test_the_series_stage_lists_the_views_its_sql_reads():
    """A change to a view the series read (a point's commit and place) must compute the series again."""
    views = {name.removeprefix("views/") for name in sql_files.names("views")}
    listed = set(stages.statistic("series_noise").sql)
    found = {view for name in listed if name.startswith("series/") for view in lineage.tables_read(sql_files.text(name)) & views}
    read: set[str] = set()
    while found:  # and the views those views read
        read |= found
        found = {view for name in found for view in lineage.tables_read(sql_files.text(f"views/{name}")) & views} - read
    assert {"run_points", "commit_places"} <= read
    assert {f"views/{view}" for view in read} <= listed


def test_every_stage_reads_stages_and_its_entry_function_exists():
    for name, stage in stages.STAGES.items():
        assert set(stage.inputs) <= set(stages.STAGES), name
        module, _, function = stage.entry.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), stage.entry
        for file in stage.files:
            assert (code_version.PACKAGE / file).is_file(), file
    with pytest.raises(KeyError, match="not a stage of pipelines/stages.py"):
        stages.stage("warehouse")


def test_the_build_checks_are_generated_from_the_stages_that_publish():
    assert {stage for stage, _, _ in checks.STAGES} == {
        "tables",
        "database",
        "resource_documents",
        "latest_liger_csvs",
        "bmf_exports",
        "report",
    }
    for stage, asset, links in checks.STAGES:
        assert asset in {output for found in stages.STAGES.values() for output in found.outputs}, stage
        assert links == stages.stage(stage).published


def test_a_change_to_a_module_that_only_words_messages_changes_no_code_version(monkeypatch, tmp_path):
    before = all_versions()
    for module in ("pipelines.core.errors", "pipelines.core.background"):
        assert any(module in code_version.closure([stage.module]) for stage in stages.STAGES.values()), module
    with_module(monkeypatch, tmp_path, "pipelines.core.errors", "\n\ndef _reworded():\n    return 'another message'\n")
    assert all_versions() == before


def test_a_change_to_a_rule_the_stages_share_changes_every_stage_that_runs_it(monkeypatch, tmp_path):
    before = all_versions()
    with_module(monkeypatch, tmp_path, "pipelines.core.canonical", "\n_A_CHANGED_RULE = 1\n")
    after = all_versions()
    changed = {name for name in before if before[name] != after[name]}
    runs_it = {name for name, stage in stages.STAGES.items() if "pipelines.core.canonical" in _closure(stage)}
    assert changed == runs_it and "tables" in changed


def _closure(stage: stages.Stage) -> list[str]:
    return code_version.closure(stage.modules or [stage.module], [*stage.leave_out, *stages.QUIET])


def test_a_format_version_bump_rebuilds_exactly_that_stage(monkeypatch):
    before = all_versions()
    monkeypatch.setitem(stages.STAGES, "bmf_exports", replace(stages.STAGES["bmf_exports"], format=2))
    after = all_versions()
    assert {name for name in before if before[name] != after[name]} == {"bmf_exports"}


def test_a_computing_librarys_new_version_changes_the_stages_it_computes(monkeypatch):
    before = all_versions()
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "99.0" if name == "ruptures" else real(name))
    after = all_versions()
    assert {name for name in before if before[name] != after[name]} == {"statistics/series_noise", "statistics/change_points"}
