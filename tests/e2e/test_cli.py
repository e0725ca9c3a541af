"""The command line as a user meets it: one line on stderr and a clear exit code (2 for a usage error, 1 for
a failure) instead of a traceback; `--out` never replaces what is not a regular file; a refused SQL
statement is named as what it is."""

from __future__ import annotations

import os
import re
import resource
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import test_security

from pipelines.__main__ import main
from pipelines.core import settings
from pipelines.statistics import db
from pipelines.storage import store

CSV_FILE = "all_benchmark_data.csv"
EXPORT_CSV = ["export-liger-csv", "--snapshot", "latest", "--file", CSV_FILE]
# test_security's two-run warehouse with its database, built once per module.
small_database = test_security.small_database


def cli(warehouse: Path, *args: str, stdout=subprocess.PIPE, preexec_fn=None) -> subprocess.CompletedProcess:
    """`python -m pipelines ARGS` in a fresh process, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(settings.PROJECT_ROOT), "WAREHOUSE_DIR": str(warehouse)}
    return subprocess.run(
        [sys.executable, "-m", "pipelines", *args],
        check=False,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        preexec_fn=preexec_fn,
    )


def assert_one_line(result: subprocess.CompletedProcess, code: int, *words: str) -> str:
    """Exit `code` and one line on stderr holding every word of `words`; returns that line."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert result.returncode == code, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def leftovers(*folders: Path) -> list[Path]:
    return [path for folder in folders for path in folder.iterdir() if ".tmp-" in path.name]


# --- --out never replaces what is not a regular file ------------------------------------------------------


def special_file(kind: str, path: Path) -> Path:
    """A symlink, FIFO, socket or character device at `path` (skips where it cannot be made)."""
    if kind == "symlink":
        target = path.with_name("target.csv")
        target.write_text("mine\n")
        path.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        if len(str(path)) > 100:
            pytest.skip("socket path too long for AF_UNIX")
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    elif kind == "device":
        try:
            os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # the numbers of /dev/null
        except PermissionError:
            pytest.skip("making a device node needs root")
    return path


@pytest.mark.parametrize("kind", ["symlink", "fifo", "socket", "device"])
def test_out_never_replaces_a_special_file(small_database, tmp_path, kind):
    out = special_file(kind, tmp_path / "out.csv")
    before = out.lstat()
    result = cli(small_database, *EXPORT_CSV, "--out", str(out))
    assert_one_line(result, 1, str(out), "not a regular file")
    after = out.lstat()
    assert (after.st_ino, after.st_mode, after.st_rdev) == (before.st_ino, before.st_mode, before.st_rdev)
    if kind == "symlink":
        assert out.resolve().read_text() == "mine\n"
    assert not leftovers(tmp_path)


def test_out_replaces_a_regular_file(small_database, tmp_path):
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    assert cli(small_database, *EXPORT_CSV, "--out", str(out)).returncode == 0
    assert out.read_text().startswith("kernel_name,")


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o555])
def test_out_never_replaces_a_read_only_file(small_database, tmp_path, mode):
    out = tmp_path / "out.csv"
    out.write_text("mine\n")
    out.chmod(mode)
    before = out.stat()
    assert_one_line(cli(small_database, *EXPORT_CSV, "--out", str(out)), 1, str(out), "read-only", "chmod u+w")
    after = out.stat()
    assert (out.read_text(), after.st_ino, after.st_mode) == ("mine\n", before.st_ino, before.st_mode)
    assert not leftovers(tmp_path)


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o660, 0o604])
def test_out_keeps_the_mode_of_the_file_it_replaces(small_database, tmp_path, mode):
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    out.chmod(mode)
    assert cli(small_database, *EXPORT_CSV, "--out", str(out)).returncode == 0
    assert out.read_text().startswith("kernel_name,")
    assert stat.S_IMODE(out.stat().st_mode) == mode


def test_export_bmf_keeps_modes_and_refuses_a_read_only_file(small_database, tmp_path):
    folder = tmp_path / "bmf"
    folder.mkdir()
    mine = folder / "nvidia-a100-sxm4-80gb.json"
    mine.write_text("{}\n")
    mine.chmod(0o600)
    assert cli(small_database, "export-bmf", "--out", str(folder)).returncode == 0
    assert mine.read_text() != "{}\n" and stat.S_IMODE(mine.stat().st_mode) == 0o600

    stale = folder / "gone-gpu.json"
    stale.write_text("{}\n")
    stale.chmod(0o444)  # it would be removed, as a GPU no longer present
    assert_one_line(cli(small_database, "export-bmf", "--out", str(folder)), 1, str(stale), "read-only")
    assert stale.read_text() == "{}\n"


def test_out_that_is_a_folder_is_refused_and_leaves_no_temporary_file(small_database, tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    result = cli(small_database, *EXPORT_CSV, "--out", str(folder))
    assert_one_line(result, 1, str(folder), "folder")
    assert folder.is_dir() and not list(folder.iterdir())
    assert not leftovers(tmp_path, folder)


def test_a_failed_atomic_write_leaves_no_temporary_file(tmp_path):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        store.write_bytes_atomic(folder, b"data")  # what a rename over a folder meets, whatever refused it first
    assert not leftovers(tmp_path, folder)


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
def test_export_bmf_never_replaces_a_special_file(small_database, tmp_path, kind):
    folder = tmp_path / "bmf"
    folder.mkdir()
    out = special_file(kind, folder / "nvidia-a100-sxm4-80gb.json")
    before = out.lstat()
    result = cli(small_database, "export-bmf", "--out", str(folder))
    assert_one_line(result, 1, str(out), "not a regular file")
    assert out.lstat().st_ino == before.st_ino
    assert not leftovers(folder)


def test_export_bmf_out_that_is_a_file_is_refused(small_database, tmp_path):
    out = tmp_path / "bmf.json"
    out.write_text("mine\n")
    assert_one_line(cli(small_database, "export-bmf", "--out", str(out)), 1, str(out), "not a folder")
    assert out.read_text() == "mine\n"


# --- one line, not a traceback -------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", ";", "-- just a comment", "  /* nothing */ ;  "])
def test_sql_without_a_statement_is_a_usage_error(small_database, query):
    assert_one_line(cli(small_database, "sql", query), 2, "no SQL statement")


def test_negative_max_rows_is_a_usage_error(small_database):
    assert_one_line(cli(small_database, "sql", "--max-rows", "-1", "SELECT 1"), 2, "--max-rows")


@pytest.mark.parametrize("state", ["missing", "empty"])
def test_show_run_without_a_warehouse_says_what_to_do(tmp_path, state):
    warehouse = tmp_path / "warehouse"
    if state == "empty":
        warehouse.mkdir()
    assert_one_line(cli(warehouse, "show-run", "X"), 1, str(warehouse), "materialize")


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create files in: read-only by its mode, or /sys where root can write anywhere."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    for candidate in (folder, Path("/sys")):
        try:
            (candidate / "probe").touch()
        except OSError:
            return candidate
        (candidate / "probe").unlink()
    pytest.skip("no read-only folder here")


def folder_under_a_file(tmp_path: Path) -> Path:
    """A missing folder that cannot be made: its parent is a regular file."""
    (tmp_path / "a-file").write_text("")
    return tmp_path / "a-file" / "out"


@pytest.mark.parametrize("where", [unwritable_folder, folder_under_a_file])
def test_exports_into_a_folder_they_cannot_write_say_so(small_database, tmp_path, where):
    folder = where(tmp_path)
    out = folder / "out.csv"
    assert_one_line(cli(small_database, *EXPORT_CSV, "--out", str(out)), 1, str(out))
    assert_one_line(cli(small_database, "export-bmf", "--out", str(folder)), 1, str(folder))


def no_file_writes() -> None:
    # Every write to a file fails with EFBIG (Python ignores SIGXFSZ): a full disk that even root meets.
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_report_that_cannot_be_written_says_so(small_database, tmp_path):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(small_database, warehouse)
    result = cli(warehouse, "report", preexec_fn=no_file_writes)
    assert_one_line(result, 1, "report", "File too large")
    assert not leftovers(warehouse)


def test_closed_pipe_ends_quietly(small_database):
    # Far more than a pipe holds, so the writer is still writing when the reader goes away.
    command = [sys.executable, "-m", "pipelines", "sql", "--format", "csv", "SELECT * FROM range(300000)"]
    env = {**os.environ, "PYTHONPATH": str(settings.PROJECT_ROOT), "WAREHOUSE_DIR": str(small_database)}
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        assert process.stdout.readline().strip() == "range"
        process.stdout.close()
        stderr = process.stderr.read()
        code = process.wait()
    assert stderr == ""
    assert code == 1


@pytest.mark.parametrize("args", [["sql", "SELECT * FROM runs"], EXPORT_CSV, ["show-run", "missing-run"]])
def test_full_standard_output_is_one_line(small_database, args):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    if args[0] == "show-run":
        (run_id,) = db.query(small_database, "SELECT run_id FROM runs LIMIT 1").rows[0]
        args = ["show-run", run_id]
    with open("/dev/full", "w") as full:
        result = cli(small_database, *args, stdout=full)
    assert_one_line(result, 1, "cannot write to standard output: No space left on device")


# --- a refused statement is named as what it is ----------------------------------------------------------

REFUSED = [
    ("INSTALL httpfs", "INSTALL"),
    ("force install httpfs", "FORCE INSTALL"),
    ("LOAD httpfs", "LOAD"),
    ("UPDATE EXTENSIONS", "UPDATE EXTENSIONS"),
    ("ATTACH 'x.duckdb' AS x", "ATTACH"),
    ("DETACH warehouse", "DETACH"),
    ("USE memory", "USE"),
    ("COPY runs TO 'x.csv'", "COPY"),
    ("EXPORT DATABASE 'x'", "EXPORT"),
    ("IMPORT DATABASE 'x'", "IMPORT"),
    ("SET threads = 1", "SET"),
    ("RESET threads", "RESET"),
    ("PRAGMA version", "PRAGMA"),
    ("CALL pragma_version()", "CALL"),
    ("CHECKPOINT", "CHECKPOINT"),
    ("VACUUM", "VACUUM"),
    ("ANALYZE", "ANALYZE"),
    ("BEGIN", "BEGIN"),
    ("PREPARE p AS SELECT 1", "PREPARE"),
    ("EXECUTE p", "EXECUTE"),
    ("DEALLOCATE p", "DEALLOCATE"),
    ("CREATE TABLE t (a INT)", "CREATE"),
    ("DROP TABLE runs", "DROP"),
    ("ALTER TABLE runs RENAME TO r", "ALTER"),
    ("COMMENT ON TABLE runs IS 'x'", "COMMENT"),
    ("INSERT INTO runs SELECT * FROM runs", "INSERT"),
    ("UPDATE runs SET provider = 'x'", "UPDATE"),
    ("DELETE FROM runs", "DELETE"),
    ("TRUNCATE runs", "TRUNCATE"),
    ("PIVOT runs ON provider USING count(*)", "PIVOT"),
    ("WITH r AS (SELECT * FROM runs) DELETE FROM runs", "DELETE"),
    ("/* a comment */ -- and another\n DROP TABLE runs", "DROP"),
    ("SELECT 1; COMMIT", "COMMIT"),
]


@pytest.mark.parametrize(("statement", "kind"), REFUSED)
def test_refused_statements_are_named_as_what_they_are(small_database, statement, kind):
    with pytest.raises(duckdb.PermissionException) as refused:
        db.query(small_database, statement)
    named = re.search(r"read-only here: (.+?) statements are not run", str(refused.value))
    assert named and named.group(1) == kind, str(refused.value)


def test_sql_command_names_install_as_install(small_database, capsys):
    assert main(["sql", "--warehouse-dir", str(small_database), "INSTALL httpfs"]) == 1
    err = capsys.readouterr().err
    assert "INSTALL statements are not run" in err and "LOAD" not in err


@pytest.mark.parametrize("form", ["table", "markdown"])
def test_sql_prints_control_characters_as_escapes_in_table_and_markdown(small_database, capsys, form):
    """A value holding a CR or an escape sequence stays on its line: the terminal is not moved by a cell."""
    query = "SELECT 'one' || chr(13) || 'two' || chr(10) || chr(27) || '[31m' AS \"a" + "\t" + 'b"'
    assert main(["sql", "--warehouse-dir", str(small_database), "--format", form, query]) == 0
    out = capsys.readouterr().out
    assert "\r" not in out and "\x1b" not in out and "\t" not in out
    assert "one\\rtwo\\n\\x1b[31m" in out and "a\\tb" in out


def test_sql_csv_keeps_control_characters_as_they_are(small_database, capsys):
    assert main(["sql", "--warehouse-dir", str(small_database), "--format", "csv", "SELECT 'one' || chr(13) || 'two' AS v"]) == 0
    assert "one\rtwo" in capsys.readouterr().out
