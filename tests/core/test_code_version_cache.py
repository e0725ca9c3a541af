"""The parses kept across processes (code_version.DISK_CACHE): the same code versions as parsing, never a stale one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.core import code_version

ENTRY = ["pipelines.ingest.staging"]


def fresh_process(monkeypatch, cache: Path) -> None:
    """As a new process with `cache` as its disk cache: nothing parsed or loaded yet."""
    monkeypatch.setattr(code_version, "DISK_CACHE", cache)
    for cached in (code_version._disk, code_version._parsed, code_version._package_graph):
        cached.cache_clear()


@pytest.fixture(autouse=True)
def _forget(monkeypatch):
    yield
    monkeypatch.undo()
    for cached in (code_version._disk, code_version._parsed, code_version._package_graph):
        cached.cache_clear()


def test_a_second_process_parses_nothing_and_gets_the_same_versions(monkeypatch, tmp_path):
    cache = tmp_path / "code_version.json"
    fresh_process(monkeypatch, cache)
    parsed = code_version.code_version(ENTRY)
    assert cache.is_file() and str(code_version.modules()[ENTRY[0]]) in json.loads(cache.read_text())
    fresh_process(monkeypatch, cache)

    def refuse(path: str):
        raise AssertionError(f"{path} parsed again")

    monkeypatch.setattr(code_version, "_parse", refuse)
    assert code_version.code_version(ENTRY) == parsed


def test_an_entry_of_another_version_of_the_file_is_not_used(monkeypatch, tmp_path):
    cache = tmp_path / "code_version.json"
    fresh_process(monkeypatch, cache)
    parsed = code_version.code_version(ENTRY)
    held = json.loads(cache.read_text())
    path = str(code_version.modules()[ENTRY[0]])
    mtime_ns, size, imports, _ = held[path]
    # The file as it was before an edit: another mtime (or size), another behaviour.
    held[path] = [mtime_ns - 1, size, imports, "0" * 64]
    cache.write_text(json.dumps(held))
    fresh_process(monkeypatch, cache)
    assert code_version.code_version(ENTRY) == parsed
    assert json.loads(cache.read_text())[path][:2] == [mtime_ns, size], "the entry is written again for the file as it is"


@pytest.mark.parametrize("damage", ["not json {", "[1, 2]", ""])
def test_a_damaged_cache_is_parsed_past(monkeypatch, tmp_path, damage):
    cache = tmp_path / "code_version.json"
    fresh_process(monkeypatch, cache)
    parsed = code_version.code_version(ENTRY)
    cache.write_text(damage)
    fresh_process(monkeypatch, cache)
    assert code_version.code_version(ENTRY) == parsed


def test_an_unwritable_cache_folder_is_no_error(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    fresh_process(monkeypatch, blocker / "code_version.json")
    fresh = code_version.code_version(ENTRY)
    fresh_process(monkeypatch, tmp_path / "elsewhere.json")
    assert code_version.code_version(ENTRY) == fresh
