"""Assemble the warehouse tables (SPEC section 4) from every staged snapshot."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from pipelines.lib import catalog, documents, schemas, store
from pipelines.lib.background import ahead
from pipelines.lib.canonical import canonical_json, digest
from pipelines.lib.ingest import RUN_ROWS_UNIQUE, WORKLOADS, SnapshotMeta, snapshot_key, staged_metas, staging_dir
from pipelines.lib.normalize_cache import DistinctCache
from pipelines.lib.normalize_describe import describe
from pipelines.lib.normalize_rules import UNIT_CONVERSIONS

STATE = "_state.json"
# Staged rows deduplicated and sorted in memory at once: what bounds the assembly's memory (about four
# buckets are in flight: read, deduplicated, described, written).
BUCKET_ROWS = 100_000
# Rows partitioned into buckets before they are appended to the buckets' files.
FLUSH_ROWS = 400_000
SAMPLES_PER_BUCKET = 200
SAMPLED_PARTS = 64
ROWS_PER_SNAPSHOT = 1 << 40
# The tables with a row per run or per staged row, and their columns written without a dictionary.
ROW_TABLES_UNIQUE = {"runs": RUN_ROWS_UNIQUE, "measurements": ("run_id", "value", "raw_value"), "run_snapshots": ()}
# Rows whose run got a suffixed id, for run_snapshots.
RENAMED = pl.Schema({"snapshot_id": pl.String, "row_number": pl.Int64, "run_id": pl.String})
# Deduplicated runs before `normalize.describe` adds the columns staging leaves out.
STAGED_RUNS = pl.Schema({**schemas.RUN_ROWS, "first_seen_snapshot": pl.String, "last_seen_snapshot": pl.String, "in_latest": pl.Boolean})
# The run key of SPEC section 2, in the column names of RUN_ROWS.
RUN_KEY = ("kernel", "provider", "pass", "metric", "x_name", "x_value", "raw_config", "gpu_name", "raw_timestamp")


def snapshot_order(metas: list[SnapshotMeta]) -> list[SnapshotMeta]:
    """Oldest first: by position in the source's history, then by when a plain file was ingested."""
    return sorted(metas, key=lambda m: (m.sequence, m.ingest_seq, m.source_file))


def latest_snapshot_ids(metas: list[SnapshotMeta], files_at_head: list[str] | None) -> set[str]:
    """The newest ingested snapshot of each file still present at the source's head."""
    newest: dict[str, SnapshotMeta] = {}
    for meta in snapshot_order([m for m in metas if m.status == "ingested"]):
        newest[meta.source_file] = meta
    return {m.snapshot_id for f, m in newest.items() if files_at_head is None or f in files_at_head}


def fingerprint(metas: list[SnapshotMeta], files_at_head: list[str] | None) -> str:
    """Changes whenever an assembled table could change: staged snapshots, head files, catalogs."""
    parts = {
        "snapshots": sorted(json.dumps(asdict(m), sort_keys=True) for m in metas),
        "files_at_head": sorted(files_at_head) if files_at_head is not None else None,
        "catalogs": [p.read_text() for p in sorted(catalog.CATALOG_DIR.glob("*.csv"))],
    }
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()


@dataclass(frozen=True)
class StagedPart:
    """One staged part file, where its snapshot stands in the history, and whether that snapshot is a latest one."""

    path: Path
    snapshot_id: str
    position: int
    latest: bool


@dataclass(frozen=True)
class TableFile:
    path: Path
    rows: int


def staged_parts(warehouse: Path, metas: list[SnapshotMeta], prefix: str, latest: set[str]) -> list[StagedPart]:
    """The `prefix` parts of every staged snapshot, oldest snapshot first, each snapshot's in row order."""
    return [
        StagedPart(path, m.snapshot_id, position, m.snapshot_id in latest)
        for position, m in enumerate(snapshot_order(metas))
        for path in sorted((staging_dir(warehouse) / snapshot_key(m.snapshot_id)).glob(f"{prefix}-*.parquet"))
    ]


def _read_part(part: StagedPart, schema: pl.Schema, columns: list[str] | None = None) -> pl.DataFrame:
    try:
        frame = pl.read_parquet(part.path, schema=schema, columns=columns)
    except (OSError, pl.exceptions.PolarsError):
        # Not the reader's message: it can quote the damaged bytes.
        raise _unreadable(part.path) from None
    return frame if frame["row_number"].is_sorted() else frame.sort("row_number")


def _unreadable(path: Path) -> store.DamagedFile:
    return store.DamagedFile(f"{path} is damaged (its footer reads, its data does not): the next run stages its snapshot again", path)


def _empty_rows() -> pl.DataFrame:
    return pl.DataFrame(schema={**schemas.RUN_ROWS, "_order": pl.Int64, "_latest": pl.Boolean})


def _with_history(frame: pl.DataFrame, part: StagedPart) -> pl.DataFrame:
    # One integer orders every row of the history: the snapshot's place, then the row's.
    return frame.with_columns(
        (pl.lit(part.position, pl.Int64) * ROWS_PER_SNAPSHOT + pl.col("row_number")).alias("_order"),
        pl.lit(part.latest).alias("_latest"),
    )


def assemble(warehouse: Path, files_at_head: list[str] | None) -> dict[str, pl.DataFrame]:
    """Every table in memory: what `write_tables` writes, read back (for small warehouses and tests)."""
    with tempfile.TemporaryDirectory(prefix="assemble-") as folder:
        files = write_tables(warehouse, files_at_head, Path(folder))
        return {name: pl.read_parquet(file.path, schema=schemas.TABLES[name]) for name, file in files.items()}


def write_tables(warehouse: Path, files_at_head: list[str] | None, out: Path) -> dict[str, TableFile]:
    """Write every table from the staged snapshots into `out` (one Parquet file each), in memory bounded
    by BUCKET_ROWS whatever the warehouse's size.

    Runs are the first occurrence of each run key in history order. They are deduplicated and sorted
    bucket by bucket: a bucket holds every staged row whose run_id falls in one range of run ids
    (a run key always has the same run_id, so all of a run's rows meet in one bucket), and the
    ranges are in order, so the buckets' sorted runs, one after another, are all runs sorted.
    """
    metas = staged_metas(warehouse)
    latest = latest_snapshot_ids(metas, files_at_head)
    row_parts = staged_parts(warehouse, metas, "rows", latest)
    accepted = sum(m.accepted for m in metas)
    describing = _Describing(_staged_cache(warehouse, metas), _sources(metas))
    scratch = out / "_buckets"
    runs_writer, measurements_writer, mapped_writer = (
        store.ParquetAppender(out / f"{name}.parquet", schemas.TABLES[name], unique) for name, unique in ROW_TABLES_UNIQUE.items()
    )
    # run_snapshots (which run each accepted row is) is written as the rows are read into buckets; again
    # from the staged parts if some runs got suffixed ids.
    gpus: set[str] = set()
    metric_passes: set[tuple[str, str]] = set()
    renamed: list[pl.DataFrame] = []
    try:
        # Reading a bucket, deduplicating the one before and writing the one before that run at once;
        # a bucket's measurements are built and written while its runs are (Parquet encoding is one
        # thread per file).
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="measurements") as measuring:
            sorted_runs = ahead(_sorted_runs(row_parts, _bucket_bounds(row_parts, accepted), scratch, mapped_writer))
            for runs, renamed_rows in ahead(_described(sorted_runs, describing)):
                measured = measuring.submit(lambda bucket: measurements_writer.write(measurements(bucket)), runs)
                renamed.append(renamed_rows)
                runs_writer.write(runs)
                gpus.update(runs["gpu_name"].unique().to_list())
                metric_passes.update(runs.select("metric", "pass").unique().rows())
                measured.result()
    finally:
        runs_writer.close()
        measurements_writer.close()
        mapped_writer.close()
        shutil.rmtree(scratch, ignore_errors=True)
    renamed_rows = pl.concat(renamed)
    files = {
        "runs": TableFile(runs_writer.path, runs_writer.rows),
        "measurements": TableFile(measurements_writer.path, measurements_writer.rows),
        "run_snapshots": TableFile(mapped_writer.path, mapped_writer.rows)
        if renamed_rows.is_empty()
        else _write_run_snapshots(row_parts, renamed_rows, mapped_writer.path),
        "quarantine": _write_quarantine(staged_parts(warehouse, metas, "quarantine", latest), out / "quarantine.parquet"),
    }
    small = {
        "environments": environments(sorted(gpus)),
        "protocols": protocols(sorted(metric_passes)),
        "snapshots": snapshots(metas, latest),
    }
    for name, frame in small.items():
        store.write_parquet(frame, out / f"{name}.parquet")
        files[name] = TableFile(out / f"{name}.parquet", frame.height)
    return {name: files[name] for name in schemas.TABLES}


@dataclass(frozen=True)
class _Describing:
    """What `normalize.describe` joins back to the runs: the per-value answers and each snapshot's source."""

    cache: DistinctCache
    sources: pl.DataFrame


def _staged_cache(warehouse: Path, metas: list[SnapshotMeta]) -> DistinctCache:
    """A cache that knows the workload answers staging computed for every staged snapshot."""
    cache = DistinctCache()
    paths = [staging_dir(warehouse) / snapshot_key(m.snapshot_id) / WORKLOADS for m in metas]
    answers = [frame for frame in (_kept_answers(path, cache.workloads.known.schema) for path in paths) if frame is not None]
    if answers:
        cache.workloads.seed(pl.concat(answers))
    return cache


def _kept_answers(path: Path, schema: pl.Schema) -> pl.DataFrame | None:
    """A snapshot's kept workload answers; None when the file is missing, unreadable or not of the
    lookup's columns. They only save work: the answers they would have given are computed again."""
    try:
        frame = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError):
        return None
    if any(frame.schema.get(name) != dtype for name, dtype in schema.items()):
        return None
    return frame.select(schema.names())


def _sources(metas: list[SnapshotMeta]) -> pl.DataFrame:
    return pl.DataFrame(
        [(m.snapshot_id, m.source, m.source_file) for m in metas],
        schema={"snapshot_id": pl.String, "source": pl.String, "source_file": pl.String},
        orient="row",
    )


def _described(
    sorted_runs: Iterator[tuple[pl.DataFrame, pl.DataFrame]], describing: _Describing
) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
    """Each bucket's runs with every column of RUNS: a step of its own, so that the next bucket is
    deduplicated while this one is described."""
    for runs, renamed_rows in sorted_runs:
        runs = describe(runs, describing.cache, describing.sources)
        yield runs.select(schemas.RUNS.names()).cast(schemas.RUNS), renamed_rows


def _sorted_runs(
    parts: list[StagedPart], bounds: list[str], scratch: Path, mapped: store.ParquetAppender
) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
    """Each bucket's runs (see `_runs`), in run_id order from one bucket to the next."""
    carry = pl.DataFrame(schema=STAGED_RUNS)
    for bucket_index, rows in enumerate(ahead(_buckets(parts, bounds, scratch, mapped))):
        runs, renamed_rows = _runs(rows)
        if not carry.is_empty():
            runs = pl.concat([carry, runs]).sort("run_id")
        # A suffixed id can sort past the next range's first ids; it then waits for that bucket.
        if bucket_index < len(bounds) and runs.height and runs["run_id"][-1] >= bounds[bucket_index]:
            beyond = pl.col("run_id") >= bounds[bucket_index]
            carry, runs = runs.filter(beyond), runs.filter(~beyond)
        yield runs, renamed_rows
    yield carry, pl.DataFrame(schema=RENAMED)


def _bucket_bounds(parts: list[StagedPart], rows: int) -> list[str]:
    """Run ids that cut the staged rows into ranges of about BUCKET_ROWS rows each, from a sample of them."""
    buckets = -(-rows // BUCKET_ROWS)
    if buckets <= 1:
        return []
    # From up to SAMPLED_PARTS parts spread over the history: reading every part's run ids costs a pass.
    sampled = parts[:: max(1, len(parts) // SAMPLED_PARTS)]
    every = max(1, rows * len(sampled) // len(parts) // (buckets * SAMPLES_PER_BUCKET))
    try:
        sample = (
            pl.scan_parquet([p.path for p in sampled], schema=schemas.RUN_ROWS)
            .select("run_id")
            .gather_every(every)
            .collect(engine="streaming")["run_id"]
            .sort()
        )
    except (OSError, pl.exceptions.PolarsError):
        for part in sampled:
            _read_part(part, schemas.RUN_ROWS, ["run_id", "row_number"])  # names the part that does not read
        raise
    cuts = [sample[len(sample) * i // buckets] for i in range(1, buckets)]
    return sorted(set(cuts))


def _buckets(parts: list[StagedPart], bounds: list[str], scratch: Path, mapped: store.ParquetAppender) -> Iterator[pl.DataFrame]:
    """The staged rows of each run-id range in turn, in history order, each with `_order` and `_latest`;
    each row's (run_id, snapshot_id, row_number) written to `mapped` as it is read."""

    def staged() -> Iterator[pl.DataFrame]:
        for part in parts:
            frame = _read_part(part, schemas.RUN_ROWS)
            mapped.write(frame.select(schemas.RUN_SNAPSHOTS.names()))
            yield _with_history(frame, part)

    if not bounds:
        yield pl.concat([_empty_rows(), *staged()])
        return
    scratch.mkdir(parents=True, exist_ok=True)
    cut = pl.lit(pl.Series(bounds, dtype=pl.String))
    with _BucketFiles(scratch) as files:
        pending: dict[int, list[pl.DataFrame]] = {}
        held = 0
        for frame in ahead(staged()):
            frame = frame.with_columns(cut.search_sorted(pl.col("run_id"), side="right").alias("_bucket"))
            for (bucket,), piece in frame.partition_by("_bucket", as_dict=True, include_key=False).items():
                pending.setdefault(bucket, []).append(piece)
            held += frame.height
            if held >= FLUSH_ROWS:
                files.append(pending)
                pending, held = {}, 0
        files.append(pending)
    for bucket in range(len(bounds) + 1):
        path = _bucket_path(scratch, bucket)
        yield pl.concat([_empty_rows(), *([pl.read_parquet(path)] if path.exists() else [])])
        path.unlink(missing_ok=True)


class _BucketFiles:
    """One Parquet file per bucket, appended to as rows arrive: uncompressed (it is read back once, soon) but
    dictionary-encoded, which keeps it small and cheap to read; scratch, so never flushed to disk."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.writers: dict[int, store.ParquetAppender] = {}
        # Parquet encodes a file on one thread: two buckets' files are written at once.
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="buckets")

    def __enter__(self) -> _BucketFiles:
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown()
        for writer in self.writers.values():
            writer.close()

    def append(self, pending: dict[int, list[pl.DataFrame]]) -> None:
        for bucket in pending:
            if bucket not in self.writers:
                self.writers[bucket] = store.ParquetAppender(
                    _bucket_path(self.folder, bucket),
                    _empty_rows().schema,
                    (*RUN_ROWS_UNIQUE, "_order"),
                    "none",
                    statistics=False,
                    durable=False,
                )
        writes = [self.pool.submit(lambda b, frames: self.writers[b].write(pl.concat(frames)), b, f) for b, f in pending.items()]
        for write in writes:
            write.result()


def _bucket_path(folder: Path, bucket: int) -> Path:
    return folder / f"{bucket:05d}.parquet"


def _runs(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The distinct runs among `rows`, sorted by run_id: each run's first occurrence in history with its
    provenance, ids made unique; and (snapshot_id, row_number, run_id) of the rows whose run got a new id."""
    # One chunk: gathers from a frame of many chunks (one per file piece) are several times slower.
    rows = rows.rechunk() if rows["_order"].is_sorted() else rows.sort("_order")
    distinct = _each_row_a_run(rows)
    if distinct is not None:
        return distinct, pl.DataFrame(schema=RENAMED)
    key = list(RUN_KEY)
    rows = rows.with_columns(pl.struct(key).hash().alias("_key"))
    provenance = _provenance(rows)
    if provenance.height < rows.height and not _one_key_per_hash(rows, provenance):
        # Two keys share a hash: group by the keys themselves.
        rows = rows.with_columns(pl.col("_order").min().over(key).alias("_key"))
        provenance = _provenance(rows)
    # One gather of the wide rows: the first occurrences, already in run_id order.
    runs = rows[provenance["_row"]].with_columns(
        pl.col("snapshot_id").alias("first_seen_snapshot"),
        provenance["last_seen_snapshot"],
        provenance["in_latest"],
    )
    renamed_rows = pl.DataFrame(schema=RENAMED)
    neighbours = (pl.col("run_id") == pl.col("run_id").shift(1)) | (pl.col("run_id") == pl.col("run_id").shift(-1))
    if runs.select(neighbours.fill_null(False).any()).item():
        runs = _disambiguate(runs).sort("run_id")
        renamed = runs.filter(pl.col("_renamed")).select(*key, "run_id")
        renamed_rows = rows.select(*key, "snapshot_id", "row_number").join(renamed, on=key, how="inner", nulls_equal=True)
        renamed_rows = renamed_rows.select("snapshot_id", "row_number", "run_id")
    return runs.select(STAGED_RUNS.names()).cast(STAGED_RUNS), renamed_rows


def _each_row_a_run(rows: pl.DataFrame) -> pl.DataFrame | None:
    """`_runs` of rows whose run ids are all distinct (a file's first ingest: every row a new run), found
    with one sort instead of hashing every key; None when an id repeats. A repeated key always repeats
    its id, so distinct ids mean distinct keys, each seen once, and no id to disambiguate."""
    by_id = rows.select(pl.arg_sort_by("run_id")).to_series()
    ids = rows["run_id"].gather(by_id)
    if (ids == ids.shift(1)).any():
        return None
    return (
        rows[by_id]
        .with_columns(
            pl.col("snapshot_id").alias("first_seen_snapshot"),
            pl.col("snapshot_id").alias("last_seen_snapshot"),
            pl.col("_latest").alias("in_latest"),
        )
        .select(STAGED_RUNS.names())
        .cast(STAGED_RUNS)
    )


def _provenance(rows: pl.DataFrame) -> pl.DataFrame:
    """Per run key (`_key`): the row of its first occurrence, its last snapshot and whether any of its
    snapshots is a latest one; sorted by run_id. Rows are in history order, which group_by keeps within groups."""
    return (
        rows.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"), "_key", "run_id", "snapshot_id", "_latest")
        .group_by("_key")
        .agg(
            pl.col("_row").first(),
            pl.col("run_id").first(),
            pl.col("snapshot_id").last().alias("last_seen_snapshot"),
            pl.col("_latest").any().alias("in_latest"),
        )
        .sort("run_id", "_row")
    )


def _one_key_per_hash(rows: pl.DataFrame, provenance: pl.DataFrame) -> bool:
    key = list(RUN_KEY)
    firsts = rows[provenance["_row"]].select(*key, "_key")
    same = rows.select(*key, "_key").join(firsts, on="_key", how="left", suffix="_first")
    return bool(same.select(pl.all_horizontal([pl.col(k).eq_missing(pl.col(f"{k}_first")) for k in key]).all()).item())


def _write_run_snapshots(parts: list[StagedPart], renamed: pl.DataFrame, path: Path) -> TableFile:
    """Which run each accepted row is, in history order, part by part."""
    writer = store.ParquetAppender(path, schemas.RUN_SNAPSHOTS)
    try:
        for frame in ahead(_read_part(part, schemas.RUN_ROWS, ["run_id", "snapshot_id", "row_number"]) for part in parts):
            if not renamed.is_empty():
                frame = frame.join(renamed, on=["snapshot_id", "row_number"], how="left", suffix="_new", maintain_order="left")
                frame = frame.with_columns(pl.coalesce("run_id_new", "run_id").alias("run_id"))
            writer.write(frame.select(schemas.RUN_SNAPSHOTS.names()))
    finally:
        writer.close()
    return TableFile(path, writer.rows)


def _write_quarantine(parts: list[StagedPart], path: Path) -> TableFile:
    writer = store.ParquetAppender(path, schemas.QUARANTINE)
    try:
        for part in parts:
            writer.write(_read_part(part, schemas.QUARANTINE))
    finally:
        writer.close()
    return TableFile(path, writer.rows)


def _disambiguate(runs: pl.DataFrame) -> pl.DataFrame:
    """Distinct runs whose ids coincide (keys that differ only in what slugs and dropped
    config keys lose) each get a suffix from a hash of their key, so every id stays unique."""
    clashing = runs["run_id"].is_duplicated()
    runs = runs.with_columns(pl.col("run_id").alias("_key_id"), clashing.alias("_renamed"))
    if not clashing.any():
        return runs
    key_text = pl.concat_str([pl.col(c).fill_null("") for c in RUN_KEY], separator="\x1f")
    suffix = key_text.map_elements(lambda key: hashlib.sha256(key.encode()).hexdigest()[:8], return_dtype=pl.String)
    return runs.with_columns(pl.when(pl.col("_renamed")).then(pl.format("{}~{}", "run_id", suffix)).otherwise("run_id").alias("run_id"))


def measurements(runs: pl.DataFrame) -> pl.DataFrame:
    """p20, p50 and p80 of every passed run; sorted by (run_id, statistic) when `runs` are sorted by run_id."""
    metric_names = {m: cm for (m, _), (cm, _, _) in UNIT_CONVERSIONS.items()}
    # The columns measurements need, before the filter copies what it keeps.
    columns = ["run_id", "metric", "unit", "raw_unit", "p20", "value", "p80", "raw_p20", "raw_p50", "raw_p80"]
    passed = runs.select(columns).filter(runs["status"] == "passed")
    n = passed.height
    # Three rows per run, next to each other: row i is run i // 3's statistic i % 3.
    index = pl.int_range(0, 3 * n, dtype=pl.Int64, eager=True)
    run_of_row, statistic = index // 3, index % 3
    interleaved = statistic * n + run_of_row
    stacked = {
        name: pl.concat([passed[c] for c in columns]).gather(interleaved)
        for name, columns in (("value", ("p20", "value", "p80")), ("raw_value", ("raw_p20", "raw_p50", "raw_p80")))
    }
    return (
        passed.select("run_id", pl.col("metric").replace(metric_names), "unit", "raw_unit")[run_of_row]
        .with_columns(
            pl.Series("statistic", ["p20", "p50", "p80"]).gather(statistic).alias("statistic"),
            stacked["value"].alias("value"),
            stacked["raw_value"].alias("raw_value"),
        )
        .filter(pl.col("value").is_not_null())
        .select(schemas.MEASUREMENTS.names())
        .cast(schemas.MEASUREMENTS)
    )


def environments(gpu_names: list[str]) -> pl.DataFrame:
    rows = []
    for gpu_name in gpu_names:
        gpu = catalog.gpu(gpu_name)
        env = documents.environment(gpu)
        rows.append(
            {
                "environment_digest": digest(env["spec"]),
                "name": env["name"],
                "title": env["title"],
                "gpu_name": gpu_name,
                "vendor": gpu.vendor,
                "product": gpu.product,
                "form_factor": gpu.form_factor,
                "architecture": gpu.architecture,
                "known": gpu.known,
                "spec": canonical_json(env["spec"]),
            }
        )
    return pl.DataFrame(rows, schema=schemas.ENVIRONMENTS)


def protocols(metric_passes: list[tuple[str, str]]) -> pl.DataFrame:
    rows = []
    for metric, pass_ in metric_passes:
        protocol = documents.protocol(metric, pass_)
        rows.append(
            {
                "protocol_digest": digest(protocol["spec"]),
                "name": protocol["name"],
                "title": protocol["title"],
                "metric": metric,
                "pass": pass_,
                "spec": canonical_json(protocol["spec"]),
            }
        )
    return pl.DataFrame(rows, schema=schemas.PROTOCOLS)


def snapshots(metas: list[SnapshotMeta], latest: set[str]) -> pl.DataFrame:
    rows = [
        {
            "snapshot_id": m.snapshot_id,
            "source": m.source,
            "source_file": m.source_file,
            "commit": m.commit,
            "committed_at": datetime.fromisoformat(m.committed_at) if m.committed_at else None,
            "subject": m.subject,
            "sequence": m.sequence,
            "content_sha256": m.content_sha256,
            "status": m.status,
            "reason": m.reason,
            "header": json.dumps(m.header),
            "row_count": m.row_count,
            "accepted": m.accepted,
            "quarantined": m.quarantined,
            "is_latest": m.snapshot_id in latest,
            "bom": m.bom,
            "line_end": m.line_end,
            "final_newline": m.final_newline,
            "layout": json.dumps(m.layout) if m.layout else None,
        }
        for m in snapshot_order(metas)
    ]
    return pl.DataFrame(rows, schema=schemas.SNAPSHOTS)
