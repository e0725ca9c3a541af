"""Faults of the source: a corrupt or half-fetched clone cache, a broken clone inside a git work tree,
an unreachable source. The previous warehouse stays readable and passes its checks, and the next
normal run repairs everything: its tables equal those of a clean ingest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FILE_GLOB, UpstreamRepo, git, liger_csv, liger_row
from fault_harness import DATA, History, assert_valid, ingest_now, same_tables
from robustness_tally import trial

from pipelines.ingest.source import open_source
from pipelines.ingest.source.git_source import GitSource
from pipelines.ingest.source.listing import SourceError

# Slow tier (faults injected into whole ingests): `pytest -m 'not slow'` leaves these out.
pytestmark = pytest.mark.slow

pytest_plugins = ["robustness_report"]


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> History:
    return History(tmp_path_factory.mktemp("faults-history"))


# ---------------------------------------------------------------- the clone cache


def clone_of(cache: Path) -> Path:
    [clone] = [p for p in cache.glob("git-*") if not p.name.endswith(".lock")]
    return clone


def damage_objects(clone: Path) -> None:
    for path in (clone / "objects").rglob("*"):
        if path.is_file() and path.parent.name != "info":
            path.unlink()


def truncate_packs(clone: Path) -> None:
    for pack in (clone / "objects" / "pack").glob("*.pack"):
        pack.chmod(0o644)
        data = pack.read_bytes()
        pack.write_bytes(data[: len(data) // 2])


def write(relative: str, text: str):
    def damage(clone: Path) -> None:
        path = clone / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.chmod(0o644)
        path.write_text(text)

    return damage


def replace_with_file(clone: Path) -> None:
    shutil.rmtree(clone)
    clone.write_text("not a repository")


def empty_folder(clone: Path) -> None:
    shutil.rmtree(clone)
    clone.mkdir()


def half_cloned(clone: Path) -> None:
    """A clone killed midway: its staging folder beside the cache, holding part of a repository."""
    staging = clone.with_name(f".clone-{clone.name}-killed")
    shutil.copytree(clone, staging)
    damage_objects(staging)


DAMAGES = {
    "objects deleted": damage_objects,
    "packs truncated (half-fetched)": truncate_packs,
    "HEAD garbage": write("HEAD", "garbage\n"),
    "branch ref to a missing commit": write("refs/heads/main", "1" * 40 + "\n"),
    "stale ref lock of a killed fetch": write("refs/heads/main.lock", ""),
    "stale packed-refs lock": write("packed-refs.lock", ""),
    "stale shallow lock": write("shallow.lock", ""),
    "half-written temporary pack": write("objects/pack/tmp_pack_killed", "PACK\x00\x00"),
    "config garbage": write("config", "[core\nbroken"),
    "packed-refs garbage": write("packed-refs", "not a ref line\n"),
    "clone replaced by a file": replace_with_file,
    "clone folder emptied": empty_folder,
    "clone staging left by a killed clone": half_cloned,
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_clone_cache_is_repaired_by_the_next_sync(history, tmp_path, damage):
    warehouse, cache = history.copy(tmp_path / "run")
    with trial("fault", f"clone cache: {damage}"):
        DAMAGES[damage](clone_of(cache))
        history.assert_repaired(warehouse, cache)
        listing = open_source(str(history.repo.path), cache, "main", FILE_GLOB).listing()
        assert listing.head == git(history.repo.path, "rev-parse", "HEAD")


def test_the_project_repository_is_never_touched_through_a_broken_clone(tmp_path):
    """A clone folder that is no repository, inside a git work tree (data/cache sits in the project's),
    must not make git act on the enclosing repository."""
    outer = UpstreamRepo(tmp_path / "project")
    outer.commit({"README.md": "project\n"}, "project")
    project_head = git(outer.path, "rev-parse", "HEAD")
    upstream = UpstreamRepo(tmp_path / "upstream")
    upstream.commit({DATA: liger_csv(liger_row())}, "data")
    with trial("fault", "clone cache: broken clone inside a git work tree"):
        source = GitSource(str(upstream.path), outer.path / "data" / "cache", "main", FILE_GLOB)
        source.clone_dir.mkdir(parents=True)
        (source.clone_dir / "HEAD").write_text("garbage\n")
        source.sync()
        assert git(outer.path, "rev-parse", "HEAD") == project_head
        assert git(outer.path, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
        assert source.listing().head == git(upstream.path, "rev-parse", "HEAD")


# ---------------------------------------------------------------- an unreachable source


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr("pipelines.ingest.source.retry.BACKOFF_SECONDS", 0.01)
    # No network: an https source fails at once instead of waiting on DNS.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "http.proxy")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "http://127.0.0.1:9")


def closed_port_url(path: str) -> str:
    return f"http://127.0.0.1:9/{path}"


@pytest.mark.parametrize(
    "make_source",
    [
        pytest.param(lambda moved: str(moved), id="local clone moved away"),
        pytest.param(lambda moved: f"file://{moved}", id="file URL of nothing"),
        pytest.param(lambda moved: closed_port_url("liger.git"), id="git over http, connection refused"),
        pytest.param(lambda moved: closed_port_url("all_benchmark_data.csv"), id="CSV URL, connection refused"),
    ],
)
def test_an_unreachable_source_is_one_clear_line_and_leaves_the_warehouse(history, tmp_path, fast_retries, make_source):
    warehouse, cache = history.copy(tmp_path / "run")
    moved = tmp_path / "moved-away"
    shutil.move(history.repo.path, moved)
    try:
        with trial("fault", "source unreachable"):
            source = make_source(history.repo.path)
            # Another source than the warehouse's is refused before it is asked: try it on a new warehouse.
            same_source = not source.startswith("http")
            with pytest.raises(SourceError) as raised:
                ingest_now(warehouse if same_source else tmp_path / "new", cache, source)
            message = str(raised.value)
            assert "\n" not in message and "LIGER_SOURCE" in message and source in message
            assert message.startswith("cannot read the Liger benchmark source"), message
            assert same_tables(assert_valid(warehouse), history.before)
    finally:
        shutil.move(moved, history.repo.path)
    history.assert_repaired(warehouse, cache)
