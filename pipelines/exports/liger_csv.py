"""Rebuild an upstream snapshot as a Liger CSV from the normalized tables.

The file is built from `runs`, `measurements`, `run_snapshots` and
`quarantine`, not from a stored copy of the file: it proves that
normalization lost nothing. What each field is made from:

- the header is the snapshot's own (`snapshots.header`), in its order;
  columns beyond the known fifteen come from `runs.extra_columns`;
- each accepted row is its run (found by `run_snapshots.row_number`), with
  the text fields as upstream wrote them;
- `y_value_50/20/80` are numbers from the warehouse: the measurement's
  `raw_value` (passed runs), else the run's `raw_p*` (a failed run's p20 or
  p80). The run's verbatim text is written when it reads as that number
  (`1.50`, `1e-3`), else the number as Python writes a float (the shortest
  text that reads back as the same double). A missing value (`nan`, empty)
  is written as the run's verbatim text;
- a quarantined row is put back at its row number as its `raw` text, so the
  rebuilt file has every row of the original.

Records are written like upstream writes them (Python's csv writer, excel
dialect: minimal quoting); what else the file held is the snapshot's layout
(`bom`, `line_end`, `layout` in the snapshots table: blank lines, a missing
final newline, rows quoted otherwise). The rebuilt bytes must hash to the
snapshot's `content_sha256`: when they do not, or the layout says the file
cannot be rebuilt (bytes that are not UTF-8), NotExact says why and nothing
is written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import polars as pl

from pipelines.core import display
from pipelines.core.layout import Layout
from pipelines.core.schemas import AS_WRITTEN
from pipelines.ingest.parse import UTF8_BOM, render, render_all
from pipelines.storage import store

LATEST = "latest"
STATISTICS = {"y_value_50": "p50", "y_value_20": "p20", "y_value_80": "p80"}
# Upstream's column -> the runs column holding its text as written.
TEXT_FIELDS = {column: kept for column, kept in AS_WRITTEN.items() if column not in STATISTICS}


class ExportError(ValueError):
    """The snapshot cannot be rebuilt; the message says why."""


class NotExact(ExportError):
    """The tables do not give the snapshot's bytes back; the message says why."""


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: str
    source_file: str
    header: tuple[str, ...]
    row_count: int
    content_sha256: str | None = None
    bom: bool = False
    line_end: str = "\r\n"
    layout: dict | None = None

    @property
    def file_name(self) -> str:
        return PurePosixPath(self.source_file).name


def _table(warehouse: Path, name: str) -> pl.LazyFrame:
    path = Layout(warehouse).table(name)
    if not path.exists():
        raise ExportError(f"no {name} table in {warehouse}: materialize the warehouse first")
    return pl.scan_parquet(path)


def _snapshot(row: dict) -> Snapshot:
    return Snapshot(
        row["snapshot_id"],
        row["source_file"],
        tuple(json.loads(row["header"] or "[]")),
        row["row_count"],
        content_sha256=row.get("content_sha256"),
        bom=bool(row.get("bom")),
        line_end=row.get("line_end") or "\r\n",
        layout=json.loads(row["layout"]) if row.get("layout") else None,
    )


def latest_snapshots(warehouse: Path) -> list[Snapshot]:
    """The newest snapshot of every file still at the source's head."""
    rows = _table(warehouse, "snapshots").filter(pl.col("is_latest")).sort("source_file").collect()
    return [_snapshot(r) for r in rows.iter_rows(named=True)]


def resolve_snapshot(warehouse: Path, snapshot: str, file: str | None = None) -> Snapshot:
    """A snapshot by id, or `latest` with the file's name (or path) when several files are at head."""
    if snapshot != LATEST:
        rows = _table(warehouse, "snapshots").filter(pl.col("snapshot_id") == snapshot).collect()
        if rows.is_empty():
            raise ExportError(f"no snapshot {snapshot!r} in {warehouse}")
        return _snapshot(rows.row(0, named=True))
    latest = latest_snapshots(warehouse)
    matching = [s for s in latest if file is None or file in (s.source_file, s.file_name)]
    if len(matching) == 1:
        return matching[0]
    names = ", ".join(s.file_name for s in latest) or "none"
    if not matching:
        raise ExportError(f"no latest snapshot of {file!r}; the files at head are: {names}")
    raise ExportError(f"several files are at head ({names}): name one with --file")


def _accepted_rows(warehouse: Path, snapshot_ids: list[str]) -> pl.DataFrame:
    """The runs the snapshots place, each with its row number and measurements: one read of the tables for them all."""
    placed = (
        _table(warehouse, "run_snapshots").filter(pl.col("snapshot_id").is_in(snapshot_ids)).select("snapshot_id", "run_id", "row_number")
    )
    runs = _table(warehouse, "runs").select(
        "run_id",
        *TEXT_FIELDS.values(),
        "extra_columns",
        *[f"raw_{column}" for column in STATISTICS],
        *[f"raw_{stat}" for stat in STATISTICS.values()],
    )
    measured = (
        _table(warehouse, "measurements")
        .join(placed.select("run_id").unique(), on="run_id", how="semi")
        .select("run_id", "statistic", "raw_value")
        .collect()
        .pivot("statistic", index="run_id", values="raw_value")
    )
    measured = measured.rename({s: f"measured_{s}" for s in STATISTICS.values() if s in measured.columns})
    frame = placed.join(runs, on="run_id", how="left").collect().join(measured, on="run_id", how="left")
    missing = frame.filter(pl.col("raw_kernel").is_null())
    if missing.height:
        snapshot_id = missing["snapshot_id"][0]
        runs_missing = missing.filter(pl.col("snapshot_id") == snapshot_id)["run_id"].to_list()
        raise ExportError(f"snapshot {snapshot_id} places runs that are not in the runs table: {runs_missing[:5]}")
    return frame.sort("snapshot_id", "row_number")


@dataclass(frozen=True)
class Inputs:
    """What rebuilding one snapshot reads: its runs (with their measurements) and quarantined rows."""

    placed: pl.DataFrame
    quarantined: pl.DataFrame

    def digest(self, snapshot: Snapshot, name: str, code: str) -> str:
        """The same digest means the same rebuilt bytes: every input of `rebuild`, the file's name and the code's version."""
        described = json.dumps([code, name, dataclasses.asdict(snapshot)], sort_keys=True, default=str).encode()
        digest = hashlib.sha256(described)
        for frame in (self.placed, self.quarantined):
            buffer = io.BytesIO()
            frame.rechunk().write_ipc(buffer, compression="uncompressed")
            digest.update(buffer.getvalue())
        return digest.hexdigest()


def snapshot_inputs(warehouse: Path, snapshots: list[Snapshot]) -> dict[str, Inputs]:
    """snapshot_id -> what rebuilding it reads, for all of `snapshots` at once."""
    ids = [s.snapshot_id for s in snapshots]
    placed = _accepted_rows(warehouse, ids)
    quarantined = (
        _table(warehouse, "quarantine").filter(pl.col("snapshot_id").is_in(ids)).select("snapshot_id", "row_number", "raw").collect()
    ).sort("snapshot_id", "row_number")
    each_placed = placed.partition_by("snapshot_id", as_dict=True, include_key=False)
    each_quarantined = quarantined.partition_by("snapshot_id", as_dict=True, include_key=False)
    none_placed, none_quarantined = placed.clear().drop("snapshot_id"), quarantined.clear().drop("snapshot_id")
    return {key: Inputs(each_placed.get((key,), none_placed), each_quarantined.get((key,), none_quarantined)) for key in ids}


def _y_values(placed: pl.DataFrame, column: str) -> list[float | str | None]:
    """A y column: the measurement's number (passed runs), else the run's raw_p*; its text as written where that
    reads as the number or there is no number."""
    stat = STATISTICS[column]
    raw = pl.col(f"raw_{stat}")
    measured = f"measured_{stat}"
    numbers = placed.select(pl.coalesce(measured, raw) if measured in placed.columns else raw).to_series().to_list()
    texts = placed[f"raw_{column}"].to_list()
    return [text if number is None or (text is not None and _reads_as(text, number)) else number for text, number in zip(texts, numbers)]


def _reads_as(text: str, number: float) -> bool:
    try:
        return float(text) == number
    except ValueError:
        return False


def _records(placed: pl.DataFrame, header: tuple[str, ...]) -> list[str]:
    """Each placed run's record text, in the order of `placed`: the header's fields made a column at a time."""
    if not header:
        return render_all([()] * placed.height)
    extras: list[dict] | None = None
    columns: list[list] = []
    for column in header:
        if column in STATISTICS:
            columns.append(_y_values(placed, column))
        elif column in TEXT_FIELDS:
            columns.append(placed[TEXT_FIELDS[column]].to_list())
        else:
            if extras is None:
                extras = [json.loads(extra) if extra else {} for extra in placed["extra_columns"].to_list()]
            columns.append([extra.get(column) for extra in extras])
    return render_all(zip(*columns, strict=True))


def rebuild(warehouse: Path, snapshot: Snapshot, verify: bool = True, inputs: Inputs | None = None) -> bytes:
    """The snapshot's file, rebuilt from the tables: same header, same rows in the same order, same bytes
    (NotExact when they are not; `verify=False` returns what the tables give without comparing). `inputs`: what
    `snapshot_inputs` read for it, else it is read here."""
    # A file refused whole for its header has no column names: its layout holds its first line's text.
    layout = snapshot.layout or {}
    if layout.get("inexact") and verify:
        raise NotExact(f"snapshot {snapshot.snapshot_id} cannot be rebuilt byte for byte: {layout['inexact']}")
    inputs = inputs or snapshot_inputs(warehouse, [snapshot])[snapshot.snapshot_id]
    lines = dict(zip(inputs.placed["row_number"].to_list(), _records(inputs.placed, snapshot.header), strict=True))
    placed = inputs.placed.height
    for row_number, raw in inputs.quarantined.iter_rows():
        lines[row_number] = raw
        placed += 1
    expected = list(range(1, snapshot.row_count + 1))
    if placed != snapshot.row_count or sorted(lines) != expected:
        raise ExportError(
            f"snapshot {snapshot.snapshot_id} has {snapshot.row_count} rows but the tables place "
            f"{placed} (rows 1..{snapshot.row_count} must each appear once)"
        )
    lines[0] = render(snapshot.header)
    lines.update({int(k): text for k, text in layout.get("lines", {}).items()})
    after = {int(k): text for k, text in layout.get("after", {}).items()}
    text = "".join(lines[n] + after.get(n, snapshot.line_end) for n in [0, *expected])
    data = (UTF8_BOM if snapshot.bom else b"") + text.encode("utf-8")
    if verify and snapshot.content_sha256 and hashlib.sha256(data).hexdigest() != snapshot.content_sha256:
        raise NotExact(
            f"snapshot {snapshot.snapshot_id} rebuilds to other bytes than the original's (sha256 {snapshot.content_sha256[:12]}...): "
            "a row's run was first seen with other text, or the tables were changed since; no file written"
        )
    return data


def export_names(snapshots: list[Snapshot]) -> dict[str, str]:
    """snapshot_id -> the file name of its export: the upstream file's name, or its whole path (`/` as `__`)
    when two files at head share a name, so that one odd layout upstream never stops the export; made safe
    (`safe_name`), and told apart by a hash where two names become one."""
    names = [s.file_name for s in snapshots]
    wanted = {s.snapshot_id: s.file_name if names.count(s.file_name) == 1 else s.source_file for s in snapshots}
    safe = {key: safe_name(name) for key, name in wanted.items()}
    shared = Counter(safe.values())
    # A name that was safe as it was keeps it; one that became another's is told apart by its hash.
    return {key: name if shared[name] == 1 or name == wanted[key] else safe_name(wanted[key], hashed=True) for key, name in safe.items()}


# A file name is a few hundred bytes at most on every file system; the rest of a longer one is a hash.
NAME_MAX_BYTES = 200


def safe_name(name: str, hashed: bool = False) -> str:
    """An upstream file name (or path) as a file name that is safe to write and to show: control and format
    characters (newlines, escapes, bidirectional overrides) and undecodable bytes dropped, path separators as `__`,
    no leading dot, dash or space (a hidden file, an option), at most NAME_MAX_BYTES bytes, ending in `.csv`. With
    `hashed`, or when nothing of the name is left or it was cut, `-<10 hex digits of its sha256>` precedes `.csv`."""
    kept = "".join(ch for ch in name if unicodedata.category(ch) not in ("Cc", "Cf", "Cs"))
    kept = kept.replace("/", "__").replace("\\", "__").lstrip(".- ").rstrip(". ")
    stem, suffix = (kept[:-4], kept[-4:]) if kept.lower().endswith(".csv") else (kept, ".csv")
    budget = NAME_MAX_BYTES - len(suffix) - 1 - display.HASH_CHARS
    cut = stem.encode("utf-8")[:budget].decode("utf-8", "ignore").rstrip(".- ")
    if hashed or not cut or cut != stem:
        digest = display.short_hash(name)
        return f"{cut}-{digest}{suffix}" if cut else f"snapshot-{digest}{suffix}"
    return stem + suffix


@dataclass(frozen=True)
class Kept:
    """The files of the export before this one and the digest of each one's inputs (`Inputs.digest`), by file name."""

    folder: Path
    digests: Mapping[str, str]


def write_latest(
    warehouse: Path, out_dir: Path, warn: Callable[[str], None] = lambda message: None, kept: Kept | None = None, code: str = ""
) -> dict[str, int]:
    """Rebuild the newest snapshot of every file at head into `out_dir/<file name>`, each
    atomically; CSVs there of files no longer at head are removed. Returns rows per file.

    A snapshot the tables cannot give back byte for byte is not written (a different file would pass
    for upstream's) and `warn` says why; the others are, so the daily export goes on."""
    return write_latest_digested(warehouse, out_dir, warn, kept, code)[0]


def write_latest_digested(
    warehouse: Path, out_dir: Path, warn: Callable[[str], None] = lambda message: None, kept: Kept | None = None, code: str = ""
) -> tuple[dict[str, int], dict[str, str]]:
    """`write_latest`, and each file's inputs' digest (with `code`, the export's code version). A file of `kept` whose
    inputs' digest is the same, and whose bytes still hash to the snapshot's, is copied rather than rebuilt: a new CI
    folder leaves the other files' rows as they were, and rebuilding them would give the same bytes."""
    written: dict[str, int] = {}
    digests: dict[str, str] = {}
    snapshots = [s for s in latest_snapshots(warehouse) if s.header]
    inputs = snapshot_inputs(warehouse, snapshots)
    for snapshot, name in zip(snapshots, export_names(snapshots).values()):
        digest = inputs[snapshot.snapshot_id].digest(snapshot, name, code)
        if not _copied(kept, name, digest, snapshot, out_dir / name):
            try:
                data = rebuild(warehouse, snapshot, inputs=inputs[snapshot.snapshot_id])
            except NotExact as exc:
                warn(f"{name} not exported: {exc}")
                continue
            store.write_bytes_atomic(out_dir / name, data)
        written[name], digests[name] = snapshot.row_count, digest
    for stale in out_dir.glob("*.csv"):
        if stale.name not in written:
            stale.unlink()
    return written, digests


def _copied(kept: Kept | None, name: str, digest: str, snapshot: Snapshot, target: Path) -> bool:
    if kept is None or kept.digests.get(name) != digest or not snapshot.content_sha256:
        return False
    try:
        data = (kept.folder / name).read_bytes()
    except OSError:
        return False
    # A kept file changed in place since (its size the same) is rebuilt.
    if hashlib.sha256(data).hexdigest() != snapshot.content_sha256:
        return False
    store.write_bytes_atomic(target, data)
    return True
