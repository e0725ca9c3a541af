"""Security: LIGER_SOURCE takes only git URLs (https, ssh, file), local paths and http(s) URLs;
nothing from the source string or the data reaches a shell, a file path or SQL text; the `sql`
command cannot write to the warehouse."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import FILE_GLOB, build_warehouse, liger_csv, liger_row
from robustness_tally import trial

from pipelines.__main__ import main
from pipelines.core import settings
from pipelines.ingest.source import open_source
from pipelines.ingest.source.git_source import GitSource
from pipelines.ingest.source.listing import SourceError
from pipelines.statistics import database_build, db

pytest_plugins = ["robustness_report"]

DATA = "benchmark/data/all_benchmark_data.csv"
PWNED = "pwned-by-liger-test"


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr("pipelines.ingest.source.retry.BACKOFF_SECONDS", 0.01)


def no_side_effects(folder: Path) -> None:
    """No file named PWNED anywhere under `folder`, nor where a relative or /tmp path would land."""
    found = [*folder.rglob(f"{PWNED}*"), *(p for top in (settings.PROJECT_ROOT, Path.cwd(), Path("/tmp")) for p in top.glob(f"{PWNED}*"))]
    assert not found, f"a command ran: {found}"


@pytest.mark.parametrize(
    "source",
    [
        "ext::sh -c touch% /tmp/{pwned}",
        "fd::3",
        "-uoption",
        "--upload-pack=touch /tmp/{pwned}",
        "-",
        "ftp://example.invalid/all_benchmark_data.csv",
        "git://example.invalid/liger.git",
        "rsync://example.invalid/liger.git",
        "s3://bucket/all_benchmark_data.csv",
        "data:text/csv,kernel_name",
        "javascript:alert(1)",
        "gopher://example.invalid/",
        "file::ext::sh",
        "",
    ],
)
def test_other_sources_are_refused_before_anything_runs(source, tmp_path):
    with trial("fault", "LIGER_SOURCE of a refused kind"):
        source = source.format(pwned=PWNED)
        with pytest.raises(SourceError) as raised:
            open_source(source, tmp_path / "cache", "main", FILE_GLOB).sync()
        assert "\n" not in str(raised.value)
        assert not (tmp_path / "cache").exists(), "nothing may be cloned for a refused source"
        no_side_effects(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(
    "source",
    [
        "ssh://-oProxyCommand=touch%20{tmp}/{pwned}/x.git",
        "ssh://git@example.invalid:-oProxyCommand=touch%20{tmp}/{pwned}/x.git",
        "https::ext::sh -c touch% {tmp}/{pwned}",
        "file://{tmp}/missing; touch {tmp}/{pwned}",
        "$(touch {tmp}/{pwned})",
        "`touch {tmp}/{pwned}`",
        "{tmp}/repo; touch {tmp}/{pwned}",
        "https://example.invalid/liger.git --upload-pack=touch%20{tmp}/{pwned}",
    ],
)
def test_hostile_source_strings_never_reach_a_shell(source, tmp_path, fast_retries, monkeypatch):
    # No network: an https source fails at once instead of waiting on DNS.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "http.proxy")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "http://127.0.0.1:9")
    with trial("fault", "hostile LIGER_SOURCE string"):
        with pytest.raises(SourceError) as raised:
            open_source(source.format(tmp=tmp_path, pwned=PWNED), tmp_path / "cache", "main", FILE_GLOB).sync()
        assert "\n" not in str(raised.value) and "LIGER_SOURCE" in str(raised.value)
        no_side_effects(tmp_path)


@pytest.mark.parametrize(
    "branch", ["--upload-pack=touch x", "-b", "main; touch x", "$(touch x)", "`touch x`", "a..b", "main\nx", "main x", ""]
)
def test_branch_names_are_plain(branch, tmp_path):
    with trial("fault", "hostile LIGER_BRANCH"), pytest.raises(SourceError, match="branch name"):
        GitSource(str(tmp_path), tmp_path / "cache", branch, FILE_GLOB)


# Values that would do harm if the data reached SQL text, a shell, a format string or a file path.
HOSTILE = {
    "kernel": "../../../../tmp/pwned-by-liger-test",
    "provider": "'; DROP TABLE runs; --",
    "gpu": "$(touch pwned-by-liger-test)",
    "x_label": "`touch pwned-by-liger-test`",
    "version": "%s%n{0}{__class__}",
    "config": json.dumps({"dtype": "'); DROP TABLE runs; --", "path": "../../../etc/passwd", "cmd": "$(id)"}),
}
HOSTILE_FILE = "benchmark/data/all_benchmark_data$(touch pwned-by-liger-test);rm -rf ~.csv"


def test_hostile_data_is_only_data(upstream_repo, tmp_path, monkeypatch, capsys):
    """Every asset materializes a history whose values and file name are shell, SQL and path
    injections; they come back verbatim from Parquet and DuckDB and nothing else happens."""
    rows = [
        liger_row(
            kernel=HOSTILE["kernel"],
            provider=HOSTILE["provider"],
            gpu=HOSTILE["gpu"],
            x_label=HOSTILE["x_label"],
            version=HOSTILE["version"],
            config=HOSTILE["config"],
        ),
        liger_row(provider="huggingface", gpu=HOSTILE["gpu"], y50="0.9", y20="0.8", y80="1"),
    ]
    upstream_repo.commit({DATA: liger_csv(*rows), HOSTILE_FILE: liger_csv(*rows)}, "hostile values")
    warehouse = tmp_path / "warehouse"
    for name, value in {"WAREHOUSE_DIR": warehouse, "LIGER_SOURCE": upstream_repo.path, "LIGER_CACHE_DIR": tmp_path / "cache"}.items():
        monkeypatch.setenv(name, str(value))
    from pipelines.definitions import defs
    from pipelines.orchestration.materialize import ingest

    with trial("fault", "shell, SQL and path injections in the data"):
        with dg.DagsterInstance.ephemeral() as instance:
            result = ingest(defs(), instance, raise_on_error=False)
        assert result.success
        no_side_effects(tmp_path)
        outside = [p for p in tmp_path.iterdir() if p.name not in ("warehouse", "cache", "upstream")]
        assert not outside, f"files written outside the warehouse and cache: {outside}"

        runs = pl.read_parquet(warehouse / "runs.parquet")
        assert runs.height == 2
        hostile = runs.filter(pl.col("kernel") == HOSTILE["kernel"]).row(0, named=True)
        assert (hostile["provider"], hostile["gpu_name"], hostile["x_label"], hostile["liger_version"], hostile["raw_config"]) == (
            HOSTILE["provider"],
            HOSTILE["gpu"],
            HOSTILE["x_label"],
            HOSTILE["version"],
            HOSTILE["config"],
        )
        assert set(pl.read_parquet(warehouse / "snapshots.parquet")["source_file"]) == {DATA, HOSTILE_FILE}

        query = "SELECT provider, gpu_name FROM runs WHERE kernel = '../../../../tmp/pwned-by-liger-test'"
        assert main(["sql", "--format", "json", "--warehouse-dir", str(warehouse), query]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed == [{"provider": HOSTILE["provider"], "gpu_name": HOSTILE["gpu"]}]
        assert db.query(warehouse, "SELECT count(*) FROM runs").rows == [(2,)]


@pytest.fixture(scope="module")
def small_database(tmp_path_factory) -> Path:
    from conftest import UpstreamRepo

    root = tmp_path_factory.mktemp("sql-read-only")
    repo = UpstreamRepo(root / "upstream")
    repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1"))}, "one")
    warehouse = build_warehouse(root / "warehouse", str(repo.path), root / "cache")
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    return warehouse


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


WRITES = [
    "DELETE FROM runs",
    "DROP TABLE runs",
    "CREATE TABLE stolen AS SELECT * FROM runs",
    "UPDATE runs SET value = 0",
    "INSERT INTO runs SELECT * FROM runs",
    "SELECT 1; DELETE FROM runs",
    "USE memory; DETACH warehouse; ATTACH '{db}' AS w; DELETE FROM w.runs",
    "ATTACH '{db}' AS w2",
    "COPY runs TO '{out}/leak.csv'",
    "EXPORT DATABASE '{out}/leak'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "CALL checkpoint()",
    "PRAGMA enable_profiling",
    "SELECT * FROM read_csv('{db}')",
    "CHECKPOINT",
]


@pytest.mark.parametrize("statement", WRITES)
def test_sql_command_opens_the_warehouse_read_only(small_database, tmp_path, capsys, statement):
    database = db.database_path(small_database)
    before = digest(database)
    text = statement.format(db=database, out=tmp_path)
    with trial("fault", "write attempt through the sql command"):
        assert main(["sql", "--warehouse-dir", str(small_database), text]) != 0
        assert capsys.readouterr().err.startswith("error:")
        assert digest(database) == before
        assert not list(tmp_path.iterdir()), "the sql command wrote a file"
        assert main(["sql", "--format", "csv", "--warehouse-dir", str(small_database), "SELECT count(*) AS n FROM runs"]) == 0
        assert capsys.readouterr().out.split() == ["n", "2"]


def test_sql_command_still_answers_queries(small_database, capsys):
    for query in (
        "SELECT count(*) FROM runs",
        "WITH r AS (SELECT * FROM runs) SELECT count(*) FROM r",
        "DESCRIBE runs",
        "SHOW TABLES",
        "EXPLAIN SELECT * FROM runs",
        "FROM snapshots SELECT row_count",
    ):
        assert main(["sql", "--warehouse-dir", str(small_database), query]) == 0, capsys.readouterr().err
    assert os.access(db.database_path(small_database), os.R_OK)


# Upstream file names no file system, terminal or shell should take as they are.
HOSTILE_NAMES = [
    "all_benchmark_data\nforged line.csv",
    "-rf all_benchmark_data.csv",
    ".all_benchmark_data.csv",
    "all_benchmark_data\x1b[31m\u202egpj.csv",
    "all_benchmark_data\\..\\escape.csv",
]


def test_export_file_names_from_upstream_drop_what_is_unsafe(upstream_repo, tmp_path):
    from pipelines.exports import liger_csv as exports

    upstream_repo.commit({f"benchmark/data/{name}": liger_csv(liger_row()) for name in HOSTILE_NAMES}, "hostile names")
    upstream_repo.commit({"benchmark/data/nested/all_benchmark_data\n.csv": liger_csv(liger_row())}, "one more, in a folder")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache", file_glob="benchmark/data/**.csv")
    out = tmp_path / "out"
    written = exports.write_latest(warehouse, out)
    assert len(written) == len(HOSTILE_NAMES) + 1
    assert sorted(path.name for path in out.iterdir()) == sorted(written)  # all in `out`, none beside it or hidden
    for name in written:
        assert name.isprintable() and "/" not in name and "\\" not in name, repr(name)
        assert not name.startswith((".", "-", " ")) and name.endswith(".csv") and len(name.encode()) <= exports.NAME_MAX_BYTES
    assert "all_benchmark_dataforged line.csv" in written and "rf all_benchmark_data.csv" in written
    assert not list(tmp_path.glob("escape*")) and not list(out.parent.glob("*.csv"))


def test_export_file_names_stay_distinct_and_short():
    from pipelines.exports.liger_csv import Snapshot, export_names

    snapshots = [Snapshot(f"s{i}/x", path, ("a",), 1) for i, path in enumerate(["d/a\n.csv", "d/a.csv", "d/" + "x" * 400 + ".csv"])]
    names = export_names(snapshots)
    assert len(set(names.values())) == 3
    assert names["s1/x"] == "a.csv" and names["s0/x"].startswith("a-") and names["s0/x"].endswith(".csv")
    assert all(len(name.encode()) <= 200 for name in names.values())
    assert export_names(list(reversed(snapshots))) == names
