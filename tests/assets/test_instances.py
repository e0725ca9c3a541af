"""One Dagster instance serves one warehouse: its partitions are that warehouse's snapshots."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import liger_csv, liger_row
from test_materialize import dagster_home, run_cli  # noqa: F401 (fixture)

from pipelines.core import instance, layout, settings

DATA = "benchmark/data/all_benchmark_data.csv"


def test_a_second_warehouse_on_one_instance_is_refused_until_the_first_is_gone(tmp_path):
    home = tmp_path / "home"
    instance.claim(home, tmp_path / "a")
    (tmp_path / "a").mkdir()
    instance.claim(home, tmp_path / "a")  # the same warehouse again
    with pytest.raises(instance.InstanceTaken, match=r"serves the warehouse .*/a, not WAREHOUSE_DIR .*/b: .*DAGSTER_HOME"):
        instance.claim(home, tmp_path / "b")
    shutil.rmtree(tmp_path / "a")
    instance.claim(home, tmp_path / "b")
    assert layout.owner_marker(home).read_text().strip() == str((tmp_path / "b").resolve())


@pytest.mark.slow
def test_two_warehouses_in_one_checkout_each_need_their_own_instance(upstream_repo, tmp_path, dagster_home):  # noqa: F811
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    other = tmp_path / "other.csv"
    other.write_text(liger_csv(liger_row(provider="torch")))
    env = {"DAGSTER_HOME": str(dagster_home), "LIGER_CACHE_DIR": str(tmp_path / "c")}
    first = run_cli(["materialize"], {**env, "WAREHOUSE_DIR": str(tmp_path / "a"), "LIGER_SOURCE": str(upstream_repo.path)}, tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    second = run_cli(["materialize"], {**env, "WAREHOUSE_DIR": str(tmp_path / "b"), "LIGER_SOURCE": str(other)}, tmp_path)
    assert second.returncode == 1
    assert second.stderr.strip().count("\n") == 0, second.stderr
    assert f"serves the warehouse {tmp_path / 'a'}" in second.stderr and "DAGSTER_HOME" in second.stderr
    assert not (tmp_path / "b").exists()


def test_the_instance_is_opened_from_any_folder_with_its_storage_under_its_home(tmp_path: Path, monkeypatch):
    from pipelines.orchestration.instance_home import open_instance

    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with open_instance(home) as opened:
        assert opened.get_runs() == []
        assert Path(opened.root_directory) == home / "data" / "dagster"
    assert (home / "data" / "dagster" / "storage").is_dir()
    assert not any(elsewhere.iterdir())  # the project's relative paths meant the home, not this folder


@pytest.mark.parametrize("text", ["storage:\n  sqlite: [\n", "storage:\n  sqlite:\n    base_dir: 5\n    nonsense: 1\n"])
def test_a_broken_dagster_yaml_is_one_line_naming_it(tmp_path: Path, text: str):
    from pipelines.core.errors import UserError
    from pipelines.orchestration.instance_home import open_instance

    (tmp_path / "dagster.yaml").write_text(text)
    with pytest.raises(UserError) as raised:
        open_instance(tmp_path)
    message = str(raised.value)
    assert "\n" not in message and str(tmp_path / "dagster.yaml") in message and "DAGSTER_HOME" in message
