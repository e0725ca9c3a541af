"""The settings are read in one place: defaults, unusable values, relative folders, and the table of docs/configuration.md."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from pipelines.core import settings
from pipelines.core.settings import PROJECT_ROOT, read


def test_an_empty_environment_gives_every_default():
    got = read({})
    assert got.source == "https://github.com/linkedin/Liger-Kernel.git"
    assert (got.branch, got.file_glob) == ("main", "benchmark/data/all_benchmark_data*.csv")
    assert got.baselines == ("huggingface", "torch")
    assert got.warehouse_dir == PROJECT_ROOT / "data" / "warehouse"
    assert got.cache_dir == PROJECT_ROOT / "data" / "cache"
    assert 1 <= got.staging_workers <= 2
    assert got.sensor_interval_s == 3600


def test_values_are_read_and_blank_ones_mean_the_default(tmp_path: Path):
    got = read(
        {
            "WAREHOUSE_DIR": str(tmp_path / "w"),
            "LIGER_CACHE_DIR": "elsewhere/cache",
            "LIGER_BRANCH": "  ",
            "LIGER_BASELINES": " torch , ,huggingface",
            "LIGER_STAGING_WORKERS": " ",
            "LIGER_SENSOR_INTERVAL_S": "",
        }
    )
    assert got.warehouse_dir == tmp_path / "w"
    assert got.cache_dir == PROJECT_ROOT / "elsewhere" / "cache"  # relative: from the checkout's root
    assert got.branch == "main"
    assert got.baselines == ("torch", "huggingface")
    assert got.sensor_interval_s == 3600
    assert got.staging_workers == read({}).staging_workers
    assert read({"LIGER_BASELINES": ","}).baselines == ("huggingface", "torch")
    assert read({"LIGER_STAGING_WORKERS": "1"}).staging_workers == 1
    assert read({"LIGER_SENSOR_INTERVAL_S": " 60 "}).sensor_interval_s == 60
    assert read({}).staging_parallel_after_s == 15
    assert read({"LIGER_STAGING_PARALLEL_AFTER_S": "0"}).staging_parallel_after_s == 0


# Every setting, blank: each means its default (a blank LIGER_SOURCE is not the current folder).
BLANK = [name for name in re.findall(r'(?:text|count)\("([A-Z_]+)"', Path(settings.__file__).read_text())]


@pytest.mark.parametrize("blank", ["", "   ", "\t \n"])
def test_a_blank_value_means_the_default_for_every_setting(blank):
    assert read(dict.fromkeys(BLANK, blank)) == read({})


def test_a_blank_source_stays_the_default_and_is_not_the_current_folder(tmp_path: Path):
    blank = dict.fromkeys(("LIGER_SOURCE", "LIGER_CI_SOURCE", "WAREHOUSE_DIR", "LIGER_CACHE_DIR"), "   ")
    got = read(blank, cwd=tmp_path)
    assert got.source == settings.DEFAULT_SOURCE
    assert got.ci_source is None
    assert got.warehouse_dir == read({}).warehouse_dir


def test_a_relative_source_with_spaces_around_it_is_parsed_once_as_the_users_folder(monkeypatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LIGER_SOURCE", " upstream.git ")
    monkeypatch.setenv("LIGER_CI_SOURCE", "ci/upstream.git")
    got = read(os.environ)
    assert got.source == str(tmp_path / "upstream.git")
    assert got.ci_source == str(tmp_path / "ci" / "upstream.git")
    assert read({"LIGER_SOURCE": "upstream.git"}, cwd=tmp_path / "x").source == str(tmp_path / "x" / "upstream.git")
    assert os.environ["LIGER_SOURCE"] == " upstream.git "  # parsed, never written back


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LIGER_STAGING_WORKERS", "0"),
        ("LIGER_STAGING_WORKERS", "-5"),
        ("LIGER_STAGING_WORKERS", str(settings.MAX_STAGING_WORKERS + 1)),
        ("LIGER_STAGING_WORKERS", "500"),
        ("LIGER_STAGING_WORKERS", "two"),
        ("LIGER_STAGING_WORKERS", "2.5"),
        ("LIGER_STAGING_WORKERS", "\u0663"),  # an Arabic-Indic three: a digit to str.isdigit, not to a person
        ("LIGER_SENSOR_INTERVAL_S", "0"),
        ("LIGER_SENSOR_INTERVAL_S", "9"),
        ("LIGER_SENSOR_INTERVAL_S", "86401"),
        ("LIGER_SENSOR_INTERVAL_S", "1h"),
        ("LIGER_STAGING_PARALLEL_AFTER_S", "3601"),
        ("LIGER_STAGING_PARALLEL_AFTER_S", "-1"),
        ("LIGER_STREAMS", "data,cli"),
    ],
)
def test_a_value_out_of_range_or_not_a_number_is_refused_in_one_line(name, value):
    with pytest.raises(settings.SettingError) as raised:
        read({name: value})
    message = str(raised.value)
    assert "\n" not in message
    assert name in message and repr(value.strip()) in message
    if name != "LIGER_STREAMS":
        low, high = {
            "LIGER_STAGING_WORKERS": settings.staging_workers_range(),
            "LIGER_STAGING_PARALLEL_AFTER_S": settings.PARALLEL_AFTER_RANGE,
        }.get(name, settings.SENSOR_INTERVAL_RANGE)
        assert f"from {low} to {high}" in message


def test_staging_workers_are_bounded_by_the_cores_and_sixteen(monkeypatch):
    monkeypatch.setattr(settings.os, "cpu_count", lambda: 2)
    assert settings.staging_workers_range() == (1, 4)
    assert read({"LIGER_STAGING_WORKERS": "4"}).staging_workers == 4
    with pytest.raises(settings.SettingError):
        read({"LIGER_STAGING_WORKERS": "5"})
    monkeypatch.setattr(settings.os, "cpu_count", lambda: 64)
    assert settings.staging_workers_range() == (1, 16)
    monkeypatch.setattr(settings.os, "cpu_count", lambda: None)
    assert settings.staging_workers_range() == (1, 2)
    assert read({}).staging_workers == 1


def test_a_hostile_value_is_shown_on_one_line_and_cut(tmp_path: Path):
    with pytest.raises(settings.SettingError) as raised:
        read({"LIGER_STAGING_WORKERS": "1\n2" + "x" * 500})
    message = str(raised.value)
    assert "\n" not in message and len(message) < 200


def test_outside_a_checkout_a_relative_folder_is_the_users(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(settings, "IN_CHECKOUT", False)
    monkeypatch.chdir(tmp_path)
    assert read({"WAREHOUSE_DIR": "w"}).warehouse_dir == tmp_path / "w"


def test_the_docs_document_every_setting():
    source = Path(settings.__file__).read_text()
    names = set(re.findall(r'(?:text|count)\("([A-Z_]+)"', source))
    assert len(names) == len(dataclasses.fields(settings.Settings))
    table = (PROJECT_ROOT / "docs" / "configuration.md").read_text()
    assert names <= set(re.findall(r"^\| `([A-Z_]+)` \|", table, re.MULTILINE))


def test_the_docs_give_every_numeric_settings_range():
    table = (PROJECT_ROOT / "docs" / "configuration.md").read_text()

    def row(name: str) -> str:
        return next(line for line in table.splitlines() if line.startswith(f"| `{name}` |"))

    assert set(re.findall(r'count\("([A-Z_]+)"', Path(settings.__file__).read_text())) == {
        "LIGER_STAGING_WORKERS",
        "LIGER_STAGING_PARALLEL_AFTER_S",
        "LIGER_SENSOR_INTERVAL_S",
    }
    assert "From 1 to twice the cores" in row("LIGER_STAGING_WORKERS") and f"at most {settings.MAX_STAGING_WORKERS}" in row(
        "LIGER_STAGING_WORKERS"
    )
    for name, (low, high) in (
        ("LIGER_SENSOR_INTERVAL_S", settings.SENSOR_INTERVAL_RANGE),
        ("LIGER_STAGING_PARALLEL_AFTER_S", settings.PARALLEL_AFTER_RANGE),
    ):
        assert f"from {low}" in row(name) and f"to {high}" in row(name)
    assert "A blank value" in table and "exit code 2" in table


def test_the_resource_is_the_settings_field_for_field(tmp_path: Path):
    from pipelines.defs.resources import Warehouse

    given = read({"LIGER_CI_BRANCH": "pages", "LIGER_STREAMS": "ci", "LIGER_SENSOR_INTERVAL_S": "60"}, cwd=tmp_path)
    assert set(Warehouse.model_fields) == {field.name for field in dataclasses.fields(settings.Settings)}
    assert Warehouse.of(given).settings == given
    assert Warehouse.of(read({})).settings == read({})  # None (unset) survives the resource's empty string
    # Required in the resource exactly where the dataclass has no default; the others default to the dataclass's.
    required = {field.name for field in dataclasses.fields(settings.Settings) if field.default is dataclasses.MISSING}
    assert {name for name, field in Warehouse.model_fields.items() if field.is_required()} == required
    named = Warehouse(warehouse_dir=str(tmp_path), cache_dir="c", source="s", branch="b", file_glob="*.csv", baselines=["torch"])
    assert named.settings == settings.Settings(tmp_path, Path("c"), "s", "b", "*.csv", ("torch",))


def test_the_definitions_take_the_sensor_interval_and_the_resource_from_the_settings_they_are_given(tmp_path: Path):
    from pipelines.definitions import definitions_for

    given = read({"LIGER_SENSOR_INTERVAL_S": "60", "WAREHOUSE_DIR": str(tmp_path / "w")})
    definitions = definitions_for(given)
    assert next(s for s in definitions.sensors if s.name == "upstream_data_sensor").minimum_interval_seconds == 60
    assert definitions.resources["warehouse"].settings == given


def test_absolute_settings_are_read_in_a_folder_that_was_deleted(monkeypatch, tmp_path: Path):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    got = read({"LIGER_SOURCE": str(tmp_path / "upstream.git"), "WAREHOUSE_DIR": str(tmp_path / "w")})
    assert got.source == str(tmp_path / "upstream.git") and got.warehouse_dir == tmp_path / "w"


def test_the_order_of_liger_streams_is_not_part_of_the_source():
    """`ci,data` on a warehouse built with `data,ci` is the same source, not another one to refuse."""
    assert read({"LIGER_STREAMS": "ci, data"}).streams == read({"LIGER_STREAMS": "data,ci"}).streams == ("data", "ci")
    assert read({"LIGER_STREAMS": "ci,CI"}).streams == ("ci",)
