"""The sources: a git repository made here (clone, fetch, history), plain CSV files, refusals."""

import hashlib
import http.server
import threading
from pathlib import Path

import pytest
from conftest import FILE_GLOB, git, liger_csv, liger_row

from pipelines.ingest.source import open_source
from pipelines.ingest.source.address import classify
from pipelines.ingest.source.csv_source import CsvSource
from pipelines.ingest.source.git_source import GitSource
from pipelines.ingest.source.listing import SourceError

DATA = "benchmark/data/all_benchmark_data.csv"


def test_git_source_lists_every_commit_that_changed_a_data_file(upstream_repo, tmp_path):
    c1 = upstream_repo.commit({DATA: liger_csv(liger_row())}, "first", date="2025-01-01T00:00:00+00:00")
    upstream_repo.commit({"README.md": "docs"}, "docs only", date="2025-01-02T00:00:00+00:00")
    c3 = upstream_repo.commit(
        {DATA: liger_csv(liger_row(), liger_row(x_value="2048")), "benchmark/data/all_benchmark_data_cutile.csv": liger_csv(liger_row())},
        "second",
        date="2025-01-03T00:00:00+00:00",
    )
    source = open_source(str(upstream_repo.path), tmp_path / "cache", "main", FILE_GLOB)
    assert isinstance(source, GitSource)
    source.sync()
    listing = source.listing()
    assert listing.head == c3
    assert [(s.commit, s.source_file, s.sequence) for s in listing.snapshots] == [
        (c1, DATA, 1),
        (c3, DATA, 3),
        (c3, "benchmark/data/all_benchmark_data_cutile.csv", 3),
    ]
    assert listing.snapshots[0].snapshot_id == f"{c1[:12]}/all_benchmark_data.csv"
    assert listing.snapshots[0].subject == "first"
    assert source.read(listing.snapshots[1]).decode().count("\n") == 3
    assert len(listing.files_at_head) == 2


def test_git_source_fetches_new_commits_into_its_cache(upstream_repo, tmp_path):
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "first")
    source = open_source(str(upstream_repo.path), tmp_path / "cache", "main", FILE_GLOB)
    source.sync()
    clone = source.clone_dir
    assert len(source.listing().snapshots) == 1
    new_head = upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(x_value="8"))}, "second")
    assert source.remote_head() == new_head
    source.sync()
    assert source.clone_dir == clone and len(source.listing().snapshots) == 2


def test_a_corrupt_cache_is_cloned_anew(upstream_repo, tmp_path):
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "first")
    source = open_source(str(upstream_repo.path), tmp_path / "cache", "main", FILE_GLOB)
    source.sync()
    (source.clone_dir / "HEAD").write_text("garbage")
    for ref in (source.clone_dir / "refs" / "heads").iterdir():
        ref.write_text("0" * 40 + "\n")
    source.sync()
    assert len(source.listing().snapshots) == 1


def test_deleted_file_is_not_at_head(upstream_repo, tmp_path):
    upstream_repo.commit({DATA: liger_csv(liger_row()), "benchmark/data/all_benchmark_data_x.csv": liger_csv(liger_row())}, "two")
    git(upstream_repo.path, "rm", "--quiet", "benchmark/data/all_benchmark_data_x.csv")
    git(upstream_repo.path, "commit", "--quiet", "-m", "drop x")
    source = open_source(str(upstream_repo.path), tmp_path / "cache", "main", FILE_GLOB)
    source.sync()
    listing = source.listing()
    assert len(listing.snapshots) == 2 and listing.files_at_head == (DATA,)


@pytest.mark.slow
def test_unreachable_git_source_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setattr("pipelines.ingest.source.retry.BACKOFF_SECONDS", 0.01)
    source = GitSource("file:///nonexistent/liger.git", tmp_path / "cache", "main", FILE_GLOB)
    with pytest.raises(SourceError) as raised:
        source.sync()
    message = str(raised.value)
    assert "file:///nonexistent/liger.git" in message and "LIGER_SOURCE" in message and "\n" not in message


def test_plain_csv_file_is_one_snapshot_per_content(tmp_path):
    path = tmp_path / "bench.csv"
    path.write_text(liger_csv(liger_row()))
    source = open_source(str(path), tmp_path / "cache", "main", FILE_GLOB)
    assert isinstance(source, CsvSource)
    first = source.listing().snapshots[0]
    path.write_text(liger_csv(liger_row(), liger_row(x_value="9")))
    source.sync()
    second = source.listing().snapshots[0]
    assert first.snapshot_id != second.snapshot_id and first.commit is None
    assert second.snapshot_id.endswith("/bench.csv")
    # Listing hashed the file already; staging records that hash instead of reading the file again.
    assert second.content_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert second.snapshot_id.startswith(second.content_sha256[:12])


def test_a_csv_file_is_kept_as_one_copy_named_by_the_hash_of_what_was_copied(tmp_path):
    path = tmp_path / "bench.csv"
    path.write_text(liger_csv(liger_row()))
    source = open_source(str(path), tmp_path / "cache", "main", FILE_GLOB)
    for rows in ((liger_row(),), (liger_row(),), (liger_row(), liger_row(x_value="9"))):
        path.write_text(liger_csv(*rows))
        source.sync()  # the first sync copies it, the second finds its copy, the third copies the new content
        (copy,) = (tmp_path / "cache").glob("csv-*/*.csv")
        assert copy.read_bytes() == path.read_bytes()
        assert copy.stem == hashlib.sha256(path.read_bytes()).hexdigest() == source.listing().snapshots[0].content_sha256


def test_csv_over_http(tmp_path):
    (tmp_path / "all.csv").write_text(liger_csv(liger_row()))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/all.csv"
        source = open_source(url, tmp_path / "cache", "main", FILE_GLOB)
        assert isinstance(source, CsvSource)
        listing = source.listing()
        assert source.read(listing.snapshots[0]).read_bytes().startswith(b"kernel_name,")
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("https://github.com/linkedin/Liger-Kernel.git", "git"),
        ("ssh://git@example.invalid/x.git", "git"),
        ("git@example.invalid:org/x.git", "git"),
        ("file:///tmp/x", "git"),
        ("https://example.invalid/data/all.csv", "csv-url"),
    ],
)
def test_accepted_sources(source, kind):
    assert classify(source) == kind


@pytest.mark.parametrize(
    "source", ["ext::sh -c touch% /tmp/pwned", "fd::3", "ftp://example.invalid/a.csv", "--upload-pack=touch /tmp/x", ""]
)
def test_refused_sources(source):
    with pytest.raises(SourceError):
        classify(source)


def test_local_paths(tmp_path):
    csv_path = tmp_path / "a.csv"
    csv_path.write_text("x")
    assert classify(str(csv_path)) == "csv-file"
    assert classify(str(tmp_path)) == "git"
    with pytest.raises(SourceError, match="no such file"):
        classify(str(tmp_path / "missing"))


def test_bundle_is_a_git_source(real_bundle: Path):
    assert classify(str(real_bundle)) == "git"


def test_a_csv_url_is_downloaded_once_and_what_is_hashed_is_staged(tmp_path):
    from conftest import build_warehouse
    from local_http import send_bytes, serving

    from pipelines.ingest.staging import staged_metas

    bodies = []

    def respond(handler):
        # Every request gets different content, as an upstream that publishes between two reads would.
        bodies.append(liger_csv(*[liger_row(x_value=str(n)) for n in range(len(bodies) + 1)]).encode())
        send_bytes(handler, bodies[-1])

    with serving(respond) as base:
        warehouse = build_warehouse(tmp_path / "w", f"{base}/all.csv", tmp_path / "cache")
    assert len(bodies) == 1, "the URL was downloaded more than once in one run"
    [meta] = staged_metas(warehouse)
    assert meta.content_sha256 == hashlib.sha256(bodies[0]).hexdigest() and meta.row_count == 1


def test_a_trickling_csv_url_fails_at_the_download_deadline(tmp_path, monkeypatch):
    import time

    from local_http import serving

    monkeypatch.setattr("pipelines.ingest.source.csv_source.DOWNLOAD_DEADLINE_SECONDS", 1)
    monkeypatch.setattr("pipelines.ingest.source.retry.BACKOFF_SECONDS", 0.01)
    body = liger_csv(liger_row()).encode()

    def trickle(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        for byte in body:  # one byte every 50 ms: each read gets something, the whole takes ~10 s
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.05)

    with serving(trickle) as base:
        url = f"{base}/all.csv"
        with pytest.raises(SourceError) as raised:
            open_source(url, tmp_path / "cache", "main", FILE_GLOB).sync()
    assert str(raised.value).startswith(f"downloading {url} did not finish within 1 s")
    assert "\n" not in str(raised.value)


def test_a_git_remote_that_never_answers_fails_at_the_deadline(tmp_path, monkeypatch):
    import socket

    monkeypatch.setattr("pipelines.ingest.source.git_source.LS_REMOTE_DEADLINE_SECONDS", 1)
    monkeypatch.setattr("pipelines.ingest.source.git_source.GIT_DEADLINE_SECONDS", 1)
    with socket.socket() as silent:  # accepts connections (the kernel does) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/liger.git"
        source = GitSource(url, tmp_path / "cache", "main", FILE_GLOB)
        with pytest.raises(SourceError, match=r"^git ls-remote of http://127\.0\.0\.1:\d+/liger\.git did not finish within 1 s"):
            source.remote_head()
        with pytest.raises(SourceError, match=r"^git clone of http://127\.0\.0\.1:\d+/liger\.git did not finish within 1 s"):
            source.sync()


def test_a_file_glob_that_matches_nothing_is_refused(upstream_repo, tmp_path):
    from conftest import build_warehouse

    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    warehouse = build_warehouse(tmp_path / "w", str(upstream_repo.path), tmp_path / "cache")
    runs_before = (warehouse / "runs.parquet").read_bytes()
    with pytest.raises(SourceError) as raised:
        build_warehouse(warehouse, str(upstream_repo.path), tmp_path / "cache", file_glob="benchmark/data/nothing_*.csv")
    message = str(raised.value)
    assert "'benchmark/data/nothing_*.csv'" in message and "LIGER_FILE_GLOB" in message and "main" in message
    assert (warehouse / "runs.parquet").read_bytes() == runs_before, "the refused run changed the tables"


def test_another_source_on_an_existing_warehouse_is_refused(upstream_repo, tmp_path, monkeypatch):
    from conftest import UpstreamRepo, build_warehouse

    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    other = UpstreamRepo(tmp_path / "other")
    other.commit({DATA: liger_csv(liger_row(x_value="7"))}, "other")
    warehouse = build_warehouse(tmp_path / "w", str(upstream_repo.path), tmp_path / "cache")
    with pytest.raises(SourceError) as raised:
        build_warehouse(warehouse, str(other.path), tmp_path / "cache")
    message = str(raised.value)
    assert str(upstream_repo.path) in message and str(other.path) in message
    assert "WAREHOUSE_DIR" in message and "\n" not in message
    # The same source spelled differently (relative, or a file URL) is the same source.
    monkeypatch.chdir(upstream_repo.path.parent)
    build_warehouse(warehouse, upstream_repo.path.name, tmp_path / "cache")
    build_warehouse(warehouse, f"file://{upstream_repo.path}", tmp_path / "cache")


def test_a_submodule_at_a_data_path_is_not_a_snapshot(upstream_repo, tmp_path):
    from conftest import build_warehouse

    from pipelines.ingest.staging import staged_metas

    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    sub = "benchmark/data/all_benchmark_data_sub.csv"
    git(upstream_repo.path, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{sub}")
    git(upstream_repo.path, "commit", "--quiet", "-m", "a submodule where data lives")
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(x_value="9"))}, "two")
    warehouse = build_warehouse(tmp_path / "w", str(upstream_repo.path), tmp_path / "cache")
    metas = staged_metas(warehouse)
    assert len(metas) == 2 and all(m.source_file == DATA and m.status == "ingested" for m in metas)
    source = open_source(str(upstream_repo.path), tmp_path / "cache", "main", FILE_GLOB)
    assert source.listing().files_at_head == (DATA,)


def test_an_unknown_branch_says_so_and_names_liger_branch(upstream_repo, tmp_path, monkeypatch):
    monkeypatch.setattr("pipelines.ingest.source.retry.BACKOFF_SECONDS", 0.01)
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    source = GitSource(str(upstream_repo.path), tmp_path / "cache", "nope", FILE_GLOB)
    with pytest.raises(SourceError) as raised:
        source.sync()
    message = str(raised.value)
    assert "'nope'" in message and "not found" in message and "LIGER_BRANCH" in message
    assert "set LIGER_SOURCE" not in message and "\n" not in message


def test_the_sensor_refuses_another_source_too(upstream_repo, tmp_path):
    from conftest import UpstreamRepo, build_warehouse

    from pipelines.core.settings import for_source
    from pipelines.ingest.source.upstream_changes import check_upstream

    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    other = UpstreamRepo(tmp_path / "other")
    other.commit({DATA: liger_csv(liger_row(x_value="7"))}, "other")
    warehouse = build_warehouse(tmp_path / "w", str(upstream_repo.path), tmp_path / "cache")
    with pytest.raises(SourceError, match="WAREHOUSE_DIR"):
        check_upstream(warehouse, for_source(str(other.path), "main", FILE_GLOB, tmp_path / "cache"), None)


def test_a_header_over_64_kib_is_read_whole(upstream_repo, tmp_path):
    from conftest import HEADER, build_warehouse

    from pipelines.ingest.staging import staged_metas

    long_name = "extra_" + "x" * 70_000
    upstream_repo.commit({DATA: f"{HEADER},{long_name}\n{liger_row()},v\n"}, "a very long header")
    warehouse = build_warehouse(tmp_path / "w", str(upstream_repo.path), tmp_path / "cache")
    [meta] = staged_metas(warehouse)
    assert meta.header[-1] == long_name and meta.status == "ingested" and meta.accepted == 1


def test_a_header_longer_than_the_limit_is_refused_with_its_reason(monkeypatch):
    from conftest import HEADER

    from pipelines.ingest.parse import header as parse_header

    monkeypatch.setattr(parse_header, "MAX_HEADER_BYTES", 1000)
    data = f"{HEADER},{'y' * 2000}\n{liger_row()},v\n".encode()
    with pytest.raises(parse_header.NotLigerCsv, match="header row is longer than 1000 bytes"):
        parse_header.read_header(data)
    with pytest.raises(parse_header.NotLigerCsv, match="header row is longer than 1000 bytes"):
        parse_header.read_header(data[: data.index(b"\n")])  # no line break at all
    assert parse_header.read_header(f"{HEADER}\r\n{liger_row()}\n".encode()).columns[-1] == "liger_version"
