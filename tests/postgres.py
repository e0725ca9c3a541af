"""A real PostgreSQL server for the tests, which start and stop it themselves on loopback, and Dagster
instances of either kind: the local SQLite one (dagster.yaml) or the team one (deploy/postgres/dagster.yaml).

The server skips when no PostgreSQL server binaries are installed, and fails under REQUIRE_REAL_DATA=1 (CI,
where .ci/run installs them). initdb and postgres refuse to run as root, so as root they run as `postgres`
(the Debian package's user) or `nobody`, in a temp folder owned by it.
"""

from __future__ import annotations

import itertools
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from pipelines.core import settings

HOST = "127.0.0.1"
SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")
INSTANCE_KINDS = ("sqlite", "postgres")
CONFIGS = {
    "sqlite": settings.PROJECT_ROOT / "dagster.yaml",
    "postgres": settings.PROJECT_ROOT / "deploy" / "postgres" / "dagster.yaml",
}


def unavailable(message: str) -> None:
    if os.environ.get("REQUIRE_REAL_DATA") == "1":
        pytest.fail(f"REQUIRE_REAL_DATA=1 but {message}")
    pytest.skip(message)


def _version(folder: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", folder.parent.name))


def server_binaries() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres: PATH first, then Debian's /usr/lib/postgresql/*/bin, newest first."""
    candidates = [Path(found).resolve().parent for found in filter(None, [shutil.which("pg_ctl")])]
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version, reverse=True)
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK) for name in SERVER_BINARIES):
            return folder
    return None


def server_account() -> tuple[int, int] | None:
    """(uid, gid) to run the server as, or None to run it as ourselves (we are not root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    unavailable("running as root and neither a 'postgres' nor a 'nobody' account exists to run PostgreSQL as")
    raise AssertionError("unreachable")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class PostgresServer:
    port: int
    user: str
    password: str
    host: str = HOST
    _names = itertools.count()

    def connect(self, database: str = "postgres"):
        import psycopg2

        connection = psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password, dbname=database)
        connection.autocommit = True
        return connection

    def create_database(self) -> str:
        name = f"liger_test_{os.getpid()}_{next(self._names)}"
        connection = self.connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{name}"')
        finally:
            connection.close()
        return name

    def environment(self, database: str) -> dict[str, str]:
        """The DAGSTER_PG_* variables deploy/postgres/dagster.yaml reads."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": database,
        }


def _run(command: list[str], account: tuple[int, int] | None, cwd: Path) -> subprocess.CompletedProcess:
    as_account = {"user": account[0], "group": account[1], "extra_groups": []} if account else {}
    env = {**os.environ, "LC_ALL": "C"}
    return subprocess.run(command, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, **as_account)


def _start(binaries: Path, root: Path, account: tuple[int, int] | None, user: str, password: str) -> int:
    """initdb into root/data and start the server on a free loopback port; the port it listens on."""
    (root / "password").write_text(password + "\n")
    made = _run(
        [
            str(binaries / "initdb"),
            "-D",
            str(root / "data"),
            "-U",
            user,
            f"--pwfile={root / 'password'}",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        ],
        account,
        root,
    )
    if made.returncode != 0:
        pytest.fail(f"initdb failed: {(made.stderr or made.stdout).strip().splitlines()[-1:]}")
    for _ in range(3):  # a free port can be taken between the probe and the server's bind
        port = free_port()
        options = f"-h {HOST} -p {port} -k {root / 'socket'} -c fsync=off -c full_page_writes=off -c synchronous_commit=off"
        started = _run(
            [str(binaries / "pg_ctl"), "-D", str(root / "data"), "-l", str(root / "server.log"), "-w", "-t", "60", "-o", options, "start"],
            account,
            root,
        )
        if started.returncode == 0:
            return port
    log = (root / "server.log").read_text(errors="replace").strip().splitlines() if (root / "server.log").exists() else []
    pytest.fail(f"PostgreSQL did not start: {log[-1] if log else started.stderr.strip()}")
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of our own on 127.0.0.1, its data and socket in a temp folder, for the whole session."""
    binaries = server_binaries()
    if binaries is None:
        unavailable("no PostgreSQL server binaries (initdb, pg_ctl, postgres) on PATH or in /usr/lib/postgresql/*/bin")
    try:
        import dagster_postgres  # noqa: F401
        import psycopg2  # noqa: F401
    except ImportError as missing:
        unavailable(f"{missing.name} is not installed (pip install -r requirements.lock)")
    account = server_account()
    # Not under pytest's tmp_path: its parent is private to us, and the server's account must reach this folder.
    root = Path(tempfile.mkdtemp(prefix="liger-pg-"))
    (root / "socket").mkdir()
    if account:
        for path in (root, root / "socket"):
            os.chown(path, *account)
    server = None
    try:
        server = PostgresServer(port=_start(binaries, root, account, "liger", "liger test:p@ss"), user="liger", password="liger test:p@ss")
        yield server
    finally:
        if server is not None:
            _run([str(binaries / "pg_ctl"), "-D", str(root / "data"), "-m", "fast", "-w", "stop"], account, root)
        shutil.rmtree(root, ignore_errors=True)


# The PostgreSQL server is a real service each case starts: those cases are end-to-end, left out of the fast tier.
@pytest.fixture(params=[pytest.param(kind, marks=pytest.mark.slow) if kind == "postgres" else kind for kind in INSTANCE_KINDS])
def instance_kind(request: pytest.FixtureRequest) -> str:
    return request.param


def write_instance_home(home: Path, kind: str) -> Path:
    """A DAGSTER_HOME holding `kind`'s dagster.yaml, every relative storage path moved under `home`."""
    home.mkdir(parents=True, exist_ok=True)
    text = CONFIGS[kind].read_text()
    moved = text.replace("base_dir: data/", f"base_dir: {home}/data/")
    assert moved.count(str(home)) == text.count("base_dir:"), "every storage base_dir must move to the temp home"
    (home / "dagster.yaml").write_text(moved)
    return home


@pytest.fixture
def instance_kind_home(instance_kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A DAGSTER_HOME of `instance_kind`; for PostgreSQL, a fresh database and DAGSTER_PG_* naming it."""
    if instance_kind == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        for name, value in server.environment(server.create_database()).items():
            monkeypatch.setenv(name, value)
    return write_instance_home(tmp_path / f"dagster-home-{instance_kind}", instance_kind)


@pytest.fixture
def dagster_instance(instance_kind: str, instance_kind_home: Path) -> Iterator[dg.DagsterInstance]:
    """A persistent DagsterInstance of `instance_kind`, built from its dagster.yaml as `dagster` would."""
    with dg.DagsterInstance.from_config(str(instance_kind_home)) as instance:
        storage = type(instance.run_storage).__name__
        assert storage == {"sqlite": "SqliteRunStorage", "postgres": "PostgresRunStorage"}[instance_kind], storage
        yield instance
