"""Every error a user can cause is one line on stderr naming the file or setting and the fix, with the stack only
behind `--verbose`; an interrupt is one line and exit 130 (issue 22). Run as a user runs them: `python -m pipelines`
in a fresh process."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import test_security
from conftest import FILE_GLOB, UpstreamRepo, liger_csv, liger_row
from fault_harness import ON_TWO_WORKERS, commit_history_for_workers, survivors
from test_cli import assert_one_line, cli

from pipelines.__main__ import build_parser
from pipelines.cli import cli_errors
from pipelines.core import settings
from pipelines.ingest.source import open_source
from pipelines.ingest.source.listing import CacheDiskFull

# test_security's two-run warehouse with its database, built once per module.
small_database = test_security.small_database
DATA = "benchmark/data/all_benchmark_data.csv"
READERS = {
    "show-run": ["show-run", "some-run"],
    "export-bmf": ["export-bmf", "--out", "{tmp}/bmf"],
    "export-liger-csv": ["export-liger-csv", "--snapshot", "latest", "--file", "all_benchmark_data.csv"],
}


def damaged_copy(warehouse: Path, tmp_path: Path) -> Path:
    """A copy of `warehouse` whose runs.parquet lost its second half (its footer)."""
    copy = tmp_path / "warehouse"
    shutil.copytree(warehouse, copy)
    runs = copy / "runs.parquet"
    os.truncate(runs, runs.stat().st_size // 2)
    return copy


@pytest.mark.parametrize("command", sorted(READERS))
def test_a_damaged_table_is_named_in_one_line_with_the_fix(small_database, tmp_path, command):
    warehouse = damaged_copy(small_database, tmp_path)
    args = [arg.format(tmp=tmp_path) for arg in READERS[command]]
    line = assert_one_line(cli(warehouse, *args), 1, str(warehouse / "runs.parquet"), "damaged", "python -m pipelines materialize")
    assert "polars" not in line and "PAR1" not in line  # the reader's words (and bytes) stay behind --verbose

    verbose = cli(warehouse, *args, "--verbose")
    assert verbose.returncode == 1
    assert "Traceback" in verbose.stderr and "ComputeError" in verbose.stderr
    assert verbose.stderr.splitlines()[-1] == line  # the stack first, the line that says what to do last


def test_a_damaged_database_is_named_in_one_line_with_the_fix(small_database, tmp_path):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(small_database, warehouse)
    os.truncate(warehouse / "warehouse.duckdb", 5000)
    line = assert_one_line(cli(warehouse, "sql", "SELECT count(*) FROM runs"), 1, str(warehouse / "warehouse.duckdb"))
    assert line.endswith("run `python -m pipelines materialize`, which rebuilds it")


def test_a_query_on_standard_input_that_is_not_utf8_is_a_usage_error(small_database):
    env = {**os.environ, "PYTHONPATH": str(settings.PROJECT_ROOT), "WAREHOUSE_DIR": str(small_database)}
    result = subprocess.run(
        [sys.executable, "-m", "pipelines", "sql", "-"], input=b"SELECT '\xff\xfe' AS x", env=env, capture_output=True, check=False
    )
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2, result.stderr
    assert lines == ["error: the query on standard input is not UTF-8 text (byte 0xff at byte 9): give it as UTF-8"]


def test_an_argument_that_is_not_utf8_is_a_usage_error(small_database):
    env = {**os.environ, "PYTHONPATH": str(settings.PROJECT_ROOT), "WAREHOUSE_DIR": str(small_database)}
    for args in ([b"sql", b"SELECT '\xff'"], [b"compare", b"--kernel", b"rms\xffnorm", b"--gpu", b"A100"]):
        result = subprocess.run([sys.executable, "-m", "pipelines", *args], env=env, capture_output=True, check=False)
        assert result.returncode == 2, result.stderr
        [line] = result.stderr.decode().splitlines()
        assert "is not UTF-8 text (byte 0xff" in line and "Traceback" not in line


def test_a_sql_error_of_several_lines_is_one(small_database):
    line = assert_one_line(cli(small_database, "sql", "SELECT nope FROM runs"), 1, "Binder Error", "nope", "LINE 1: SELECT nope FROM runs")
    assert "^" not in line


@pytest.mark.parametrize(("name", "value"), [("LIGER_STAGING_WORKERS", "0"), ("LIGER_SENSOR_INTERVAL_S", "soon")])
def test_a_setting_that_cannot_be_used_exits_2_naming_it(small_database, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert_one_line(cli(small_database, "sql", "SELECT 1"), 2, name, repr(value), "from ")


def test_a_blank_setting_is_its_default_on_the_command_line(small_database, monkeypatch):
    for name in ("LIGER_STAGING_WORKERS", "LIGER_SENSOR_INTERVAL_S", "LIGER_SOURCE", "LIGER_STREAMS", "LIGER_BASELINES"):
        monkeypatch.setenv(name, "  ")
    result = cli(small_database, "sql", "SELECT count(*) AS n FROM runs", "--format", "csv")
    assert (result.returncode, result.stdout, result.stderr) == (0, "n\n2\n", "")


def test_a_dagster_home_that_is_not_a_folder_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "missing"))
    assert_one_line(cli(tmp_path / "warehouse", "materialize"), 2, "DAGSTER_HOME=", str(tmp_path / "missing"), "unset DAGSTER_HOME")
    assert not (tmp_path / "missing").exists()


def test_verbose_is_taken_before_and_after_every_command():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # every subcommand, as --help lists them
    minimal = {
        "show-run": ["x"],
        "compare": ["--kernel", "k", "--gpu", "g"],
        "export-liger-csv": ["--snapshot", "latest"],
        "verdict": ["x.csv"],
    }
    for command in commands:
        rest = minimal.get(command, [])
        assert parser.parse_args([command, *rest]).verbose is False
        assert parser.parse_args(["--verbose", command, *rest]).verbose is True
        assert parser.parse_args([command, *rest, "--verbose"]).verbose is True


def test_an_interrupt_outside_the_command_says_so_in_one_line():
    assert cli_errors.outcome(KeyboardInterrupt(), None) == (130, "interrupted; the last good warehouse is kept")


# --- a full cache disk ----------------------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB file system (tmpfs) at tmp_path/disk; skips where mounting is not allowed (not root)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True, check=False).returncode:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=False)


def bulky_history(root: Path) -> UpstreamRepo:
    """A repository whose one snapshot is ~400 KB of digits that do not compress below the small disk's size."""
    noise = random.Random(22)
    rows = [liger_row(x_value=str(noise.randrange(10**60)), config=f'{{"seed": {noise.randrange(10**80)}}}') for _ in range(2000)]
    repo = UpstreamRepo(root / "upstream")
    repo.commit({DATA: liger_csv(*rows)}, "bulky")
    return repo


@pytest.mark.parametrize("kind", ["git", "csv"])
def test_a_full_cache_disk_names_the_cache_folder_not_the_source(small_disk, tmp_path, kind):
    repo = bulky_history(tmp_path)
    source = str(repo.path) if kind == "git" else str(repo.path / DATA)
    cache = small_disk / "cache"
    with pytest.raises(CacheDiskFull) as raised:
        open_source(source, cache, "main", FILE_GLOB).sync()
    message = str(raised.value)
    assert "\n" not in message
    assert str(cache) in message and "No space left on device" in message and "LIGER_CACHE_DIR" in message
    assert "LIGER_SOURCE" not in message


@pytest.mark.slow
def test_materialize_on_a_full_cache_disk_names_the_folder(small_disk, tmp_path):
    repo = bulky_history(tmp_path)
    process = materialize(tmp_path, str(repo.path), cache=small_disk / "cache")
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 1
    last = stderr.splitlines()[-1]
    assert last.startswith(f"failed: upstream_source: no space left on the disk of the cache folder {small_disk / 'cache'}"), stderr
    assert "LIGER_CACHE_DIR" in last and "LIGER_SOURCE" not in last and "Traceback" not in stderr


# --- materialize: a failed run, an interrupt (a whole run each: the slow tier) ---------------------------------------


def materialize(tmp_path: Path, source: str, *args: str, script: str | None = None, cache: Path | None = None) -> subprocess.Popen:
    """`python -m pipelines materialize ARGS` (or `script`, which ends by running it) on its own Dagster instance,
    in a session of its own so that a signal reaches its whole process group, as Ctrl-C in a terminal does."""
    home = tmp_path / "dagster-home"
    home.mkdir(exist_ok=True)
    shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        "PYTHONPATH": str(settings.PROJECT_ROOT),
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(tmp_path / "warehouse"),
        "LIGER_CACHE_DIR": str(cache or tmp_path / "cache"),
        "LIGER_SOURCE": source,
    }
    command = ["-c", script, *args] if script else ["-m", "pipelines", "materialize", *args]
    return subprocess.Popen(
        [sys.executable, *command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_as_from_a_terminal,
    )


def _as_from_a_terminal() -> None:
    """A command typed in a terminal starts with Ctrl-C delivered and not ignored. A child inherits its parent's
    ignored signals and signal mask, and the pytest worker that starts this one may have run other tests' threads and
    pools; without this, a SIGINT the test sends could wait, blocked, for ever."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@pytest.mark.slow
def test_a_failed_materialize_prints_no_stack_unless_verbose(tmp_path):
    missing = str(tmp_path / "no-such-upstream.git")
    process = materialize(tmp_path, missing)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 1, stderr
    assert "Traceback" not in stderr and "Stack Trace" not in stderr and 'File "' not in stderr, stderr
    lines = stderr.splitlines()
    assert lines[-1].startswith("failed: upstream_source: cannot read the Liger benchmark source") and "LIGER_SOURCE" in lines[-1]
    # Before it, Dagster's progress: one line per event (a failed step's too).
    assert all(" - dagster - " in line for line in lines[:-1]), stderr
    assert any("STEP_FAILURE" in line and "--verbose" in line for line in lines[:-1]), stderr

    process = materialize(tmp_path, missing, "--verbose")
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 1
    assert "Stack Trace" in stderr and stderr.splitlines()[-1] == lines[-1]


# Runs `python -m pipelines materialize`, parked (asleep) where argv[1] says, after writing the marker argv[2].
PARKED_MATERIALIZE = """
import os, sys, time
from pathlib import Path
where, marker = sys.argv[1], Path(sys.argv[2])
def park():
    marker.write_text("parked")
    time.sleep(600)
if where == "tables-publish":  # inside the Dagster run: the tables step, its build made, before it is published
    rename = os.replace
    def parked(src, dst, *args, **kwargs):
        if Path(dst).name == "current":
            park()
        return rename(src, dst, *args, **kwargs)
    os.replace = parked
else:  # before the run: the command's own listing of the source
    import pipelines.orchestration.materialize as command
    sync = command.sync
    def parked_sync(*args, **kwargs):
        park()
        return sync(*args, **kwargs)
    command.sync = parked_sync
from pipelines.__main__ import main
sys.exit(main(["materialize"]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["tables-publish", "listing"])
def test_an_interrupt_is_one_line_and_exit_130_and_keeps_the_warehouse(tmp_path, where):
    import signal
    import time

    from pipelines.assemble.tables_build import TABLE_NAMES

    repo = UpstreamRepo(tmp_path / "upstream")
    repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface"))}, "one")
    first = materialize(tmp_path, str(repo.path))
    assert first.wait(timeout=600) == 0, first.stderr.read()
    tables = {name: (tmp_path / "warehouse" / f"{name}.parquet").read_bytes() for name in TABLE_NAMES}

    repo.commit({DATA: liger_csv(*[liger_row(x_value=str(k)) for k in range(1, 30)])}, "two")
    marker = tmp_path / "parked"
    process = materialize(tmp_path, str(repo.path), where, str(marker), script=PARKED_MATERIALIZE)
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run never reached the point to interrupt"
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the whole foreground process group
    try:
        _, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        # What the process made of the signal: pending, blocked, ignored or caught (masks in hex, SIGINT is bit 2).
        status = [line for line in Path(f"/proc/{process.pid}/status").read_text().splitlines() if line.startswith("Sig")]
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"the interrupted run did not end in 120 s: {status}")

    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1] == "interrupted; the last good warehouse is kept"
    assert "Traceback" not in stderr and "InterruptedError" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert {name: (tmp_path / "warehouse" / f"{name}.parquet").read_bytes() for name in TABLE_NAMES} == tables
    assert survivors(tmp_path / "warehouse") == [], "a process of the interrupted run (Dagster's log relay, a worker) lives on"


# --- the ingest job launched without a partition (`dagster job launch -j ingest_everything`) -------------------------


def test_the_ingest_job_without_a_partition_fails_saying_what_to_pass(upstream_repo, tmp_path, monkeypatch):
    import dagster as dg
    from test_materialize import load_defs

    from pipelines.defs.source.assets import NO_PARTITION

    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    definitions = load_defs(monkeypatch, tmp_path / "warehouse", upstream_repo.path, tmp_path / "cache")
    with dg.instance_for_test() as instance:
        result = definitions.resolve_job_def("ingest_everything").execute_in_process(instance=instance, raise_on_error=False)
    [failure] = [event for event in result.all_events if event.is_step_failure]
    error = failure.step_failure_data.error
    assert failure.step_key == "raw_snapshots" and error.cls_name == "Failure"
    assert error.message.strip().endswith(NO_PARTITION) and "\n" not in NO_PARTITION
    assert '"dagster/partition"' in NO_PARTITION and "python -m pipelines materialize" in NO_PARTITION
    assert "DagsterInvariantViolationError" not in str(error.to_string())


@pytest.mark.slow
def test_an_interrupt_while_workers_stage_is_one_line(tmp_path, monkeypatch):
    """Ctrl-C reaches the staging workers too: they leave it to the run, which stops them and says so in one line."""
    import signal
    import time

    repo = UpstreamRepo(tmp_path / "upstream")
    commit_history_for_workers(repo)
    for name, value in ON_TWO_WORKERS.items():
        monkeypatch.setenv(name, value)
    process = materialize(tmp_path, str(repo.path))
    deadline = time.monotonic() + 120
    while len([p for p in survivors(tmp_path / "warehouse", 0) if "spawn_main" in p]) < 2:
        assert process.poll() is None and time.monotonic() < deadline, "the staging workers never started"
        time.sleep(0.1)
    time.sleep(1.0)  # into the staging itself, past the workers' start
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1] == "interrupted; the last good warehouse is kept"
    assert "Traceback" not in stderr and "BrokenProcessPool" not in stderr, stderr
    assert survivors(tmp_path / "warehouse") == []
