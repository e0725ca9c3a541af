"""warehouse.duckdb as a file anyone can open anywhere: self-contained (a copy of the folder, the original
gone, answers the README's queries from another folder, through the CLI and plain duckdb), in a storage
format DuckDB 1.x reads, describing its tables and columns, and healed when its bytes change in place."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import duckdb
import pytest
from statistics_warehouse import BASELINES, fixture_runs, write_warehouse

from pipelines.core import column_docs, layout, settings
from pipelines.statistics import database_publish as publish
from pipelines.statistics import db

pytest_plugins = ["statistics_warehouse"]

README = settings.PROJECT_ROOT / "README.md"
# The tables the README's queries do not read, but that a copy must answer too (they were views over Parquet).
MORE_QUERIES = [
    "SELECT count(*) FROM measurements",
    "SELECT count(*) FROM run_snapshots",
    "SELECT count(*) FROM quarantine",
    "SELECT count(*) FROM readable_runs",
    "SELECT run_id, observed_at FROM runs ORDER BY run_id LIMIT 3",  # a TIMESTAMPTZ read into Python
]
# DuckDB 1.2's storage version: every 1.x client from 1.2 on reads it (DuckDB 2.0 writes 69 by default).
STORAGE_VERSION = 65
OLDEST_CLIENT = "duckdb==1.2.2"
# The Python client reads a TIMESTAMPTZ value (observed_at) into Python through pytz.
CLIENT_NEEDS = ("pytz",)


def readme_queries() -> list[str]:
    """The statements of the README's "Example queries" SQL block."""
    section = README.read_text(encoding="utf-8").split("## Example queries", 1)[1]
    block = section.split("```sql\n", 1)[1].split("```", 1)[0]
    with duckdb.connect() as con:
        return [statement.query.strip() for statement in con.extract_statements(block)]


def copied_elsewhere(warehouse_dir: Path, tmp_path: Path) -> Path:
    """The warehouse folder copied to another place as `cp -r` copies it (its links to the published builds kept as
    links: they are relative), the original deleted."""
    copy = tmp_path / "elsewhere" / "copied-warehouse"
    shutil.copytree(warehouse_dir, copy, symlinks=True)
    shutil.rmtree(warehouse_dir)
    return copy


@pytest.fixture
def built(tmp_path: Path) -> Path:
    warehouse = tmp_path / "original"
    write_warehouse(warehouse, fixture_runs())
    publish.build_database_if_changed(warehouse, BASELINES)  # published as a build: warehouse.duckdb is a link
    assert layout.Layout(warehouse).database.is_symlink()
    return warehouse


def test_readme_has_queries() -> None:
    assert len(readme_queries()) >= 4


def test_a_copied_warehouse_answers_through_plain_duckdb_from_another_folder(built: Path, tmp_path: Path) -> None:
    copy = copied_elsewhere(built, tmp_path)
    other = tmp_path / "another-folder"
    other.mkdir()
    script = (
        "import duckdb, sys\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "for query in sys.argv[2:]:\n"
        "    con.execute(query).fetchall()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(layout.Layout(copy).database), *readme_queries(), *MORE_QUERIES],
        cwd=other,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_a_copied_warehouse_answers_through_the_sql_command_from_another_folder(built: Path, tmp_path: Path) -> None:
    copy = copied_elsewhere(built, tmp_path)
    other = tmp_path / "another-folder"
    other.mkdir()
    for query in [*readme_queries(), *MORE_QUERIES]:
        done = subprocess.run(
            [sys.executable, "-m", "pipelines", "sql", query, "--format", "csv", "--warehouse-dir", str(copy)],
            cwd=other,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{query}: {done.stderr}"


def test_the_file_reads_no_other_file(built: Path) -> None:
    with duckdb.connect(str(db.database_path(built)), read_only=True) as con:
        views = con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall()
    assert views, "run_noise and readable_runs are views"
    assert not [name for name, sql in views if "read_parquet" in sql or ".parquet" in sql]


def test_the_file_is_in_a_storage_format_duckdb_1_reads(built: Path) -> None:
    header = db.database_path(built).read_bytes()[:20]
    assert header[8:12] == b"DUCK"
    (version,) = struct.unpack("<Q", header[12:20])
    assert version == STORAGE_VERSION


def test_tables_views_and_columns_carry_their_descriptions(built: Path) -> None:
    with duckdb.connect(str(db.database_path(built)), read_only=True) as con:
        relations = con.execute(
            "SELECT table_name, comment FROM duckdb_tables() UNION ALL SELECT view_name, comment FROM duckdb_views() WHERE NOT internal"
        ).fetchall()
        columns = con.execute("SELECT table_name, column_name, comment FROM duckdb_columns() WHERE NOT internal").fetchall()
    assert {name for name, _ in relations} >= {*db.TABLES, *db.STATISTICS}
    assert [name for name, comment in relations if not comment] == []
    assert dict(relations)["runs"] == column_docs.TABLES["runs"]
    assert dict(relations)["kernel_scorecard"].startswith("Per (kernel, pass, metric")
    assert [(table, column) for table, column, comment in columns if not comment] == []
    described = {(table, column): comment for table, column, comment in columns}
    assert described["measurements", "statistic"] == "p20, p50 or p80"
    assert described["kernel_scorecard", "provider"] == column_docs.SHARED["provider"]
    # A view in human units says so; the table in canonical units says its own.
    assert "ms" in described["readable_runs", "value"] and "ns" not in described["readable_runs", "value"]
    assert "ns" in described["runs", "unit"] and "ms" in described["readable_runs", "unit"]
    # Table comments describe the data; how a statistic is computed stays in its SQL file.
    assert "dense_rank" not in dict(relations)["series_noise"] and "rowid" not in dict(relations)["provider_comparisons"]


def test_the_x_value_is_a_number_beside_its_text(built: Path) -> None:
    with duckdb.connect(str(db.database_path(built)), read_only=True) as con:
        columns = [name for name, *_ in con.execute("DESCRIBE runs").fetchall()]
        kinds = dict(con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'runs'").fetchall())
        pairs = con.execute("SELECT DISTINCT x_value, x_value_num FROM runs").fetchall()
        readable = [name for name, *_ in con.execute("DESCRIBE readable_runs").fetchall()]
    assert columns[columns.index("x_value") + 1] == "x_value_num" and kinds["x_value_num"] == "DOUBLE"
    assert "x_value_num" in readable
    assert pairs and all(number == float(text) for text, number in pairs if number is not None)
    assert all(number is not None for text, number in pairs if text.strip().lstrip("-").replace(".", "", 1).isdigit())


def bit_rot(path: Path) -> None:
    """Bytes changed in every block, the size and times kept: what a bad disk or copy tool can leave."""
    state = path.stat()
    with path.open("r+b") as handle:
        for start in range(12288, state.st_size, 262144):  # DuckDB's 4 KiB headers, then 256 KiB blocks
            handle.seek(start + 64)
            chunk = handle.read(64)
            handle.seek(start + 64)
            handle.write(bytes(byte ^ 0xFF for byte in chunk))
    os.utime(path, ns=(state.st_atime_ns, state.st_mtime_ns))
    assert path.stat().st_size == state.st_size


def test_a_file_damaged_in_place_is_found_and_rebuilt(tmp_path: Path) -> None:
    write_warehouse(tmp_path, fixture_runs())
    first = publish.build_database_if_changed(tmp_path, BASELINES)
    assert first.rebuilt and first.damaged is None
    assert not publish.build_database_if_changed(tmp_path, BASELINES).rebuilt, "an intact file is kept"
    database = db.database_path(tmp_path)
    bit_rot(database)
    healed = publish.build_database_if_changed(tmp_path, BASELINES)
    assert healed.rebuilt
    assert healed.damaged is not None and str(database) in healed.damaged
    assert db.query(tmp_path, "SELECT count(*) FROM runs").rows == [(len(fixture_runs()),)]


def test_sql_on_a_damaged_file_names_it_and_the_fix(built: Path) -> None:
    database = db.database_path(built)
    bit_rot(database)
    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "sql", "SELECT * FROM runs", "--warehouse-dir", str(built)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=settings.PROJECT_ROOT,
    )
    assert done.returncode == 1
    line = done.stderr.strip()
    assert "\n" not in line, line
    assert str(database) in line and "python -m pipelines materialize" in line, line


def test_dagster_duckdb_is_not_a_dependency() -> None:
    project = tomllib.loads((settings.PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert not [name for name in project["project"]["dependencies"] if name.startswith("dagster-duckdb")]
    assert "dagster-duckdb" not in (settings.PROJECT_ROOT / "requirements.lock").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_oldest_duckdb_1_client_targeted_opens_the_file(built: Path, tmp_path: Path) -> None:
    """A real DuckDB 1.x, installed in a venv of its own, opens the file read-only and runs the README's queries."""
    client = tmp_path / "duckdb-1"
    venv.create(client, with_pip=True)
    python = client / "bin" / "python"
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", OLDEST_CLIENT, *CLIENT_NEEDS], capture_output=True, text=True, timeout=600
    )
    if install.returncode != 0:
        pytest.skip(f"pip could not install {OLDEST_CLIENT} (no package registry reachable?): {install.stderr.strip()[-300:]}")
    script = (
        "import duckdb, sys\n"
        "assert duckdb.__version__.startswith('1.'), duckdb.__version__\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "for query in sys.argv[2:]:\n"
        "    con.execute(query).fetchall()\n"
        "print(con.execute(\"SELECT comment FROM duckdb_tables() WHERE table_name = 'runs'\").fetchone()[0])\n"
    )
    done = subprocess.run(
        [python, "-c", script, str(db.database_path(built)), *readme_queries(), *MORE_QUERIES],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == column_docs.TABLES["runs"]
