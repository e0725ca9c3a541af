"""Which records go to quarantine and why (SPEC section 5), as polars expressions built for every row."""

from __future__ import annotations

import polars as pl

from pipelines.core.schemas import REQUIRED_VALUES
from pipelines.ingest.normalize.rules import MEASURED_METRICS, MISSING_Y, TIMESTAMP_PATTERN, UNIT_CONVERSIONS, Y_COLUMNS
from pipelines.ingest.parse.header import PARSE_ERROR
from pipelines.ingest.parse.record_layout import render


def _y_text(q: str) -> str:
    """The column of a y field's text without surrounding whitespace, stripped once for every use."""
    return f"_y_text_{q}"


def _y_missing(q: str) -> str:
    return f"_y_missing_{q}"


def with_y_numbers(frame: pl.DataFrame) -> pl.DataFrame:
    """`raw_p{q}` for each y field, and whether it is missing (`_y_missing(q)`), which the problems ask again."""
    frame = frame.with_columns(pl.col(c).str.strip_chars().alias(_y_text(q)) for q, c in Y_COLUMNS.items())
    frame = frame.with_columns(
        (pl.col(_y_text(q)).is_null() | pl.col(_y_text(q)).str.to_lowercase().is_in(MISSING_Y)).alias(_y_missing(q)) for q in Y_COLUMNS
    )
    return frame.with_columns(
        pl.when(_y_missing(q)).then(None).otherwise(pl.col(_y_text(q)).cast(pl.Float64, strict=False)).alias(f"raw_p{q}") for q in Y_COLUMNS
    )


def _blank(column: str) -> pl.Expr:
    return pl.col(column).is_null() | (pl.col(column).str.strip_chars() == "")


def _canonical(raw: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """A y number in its canonical unit, rounded as `normalize` rounds it, and that unit's name (both null when the
    metric and unit are not converted)."""
    value, unit = pl.lit(None, pl.Float64), pl.lit(None, pl.String)
    for (metric, raw_unit), (_, canonical_unit, scale) in UNIT_CONVERSIONS.items():
        known = (pl.col("metric_name") == metric) & (pl.col("metric_unit") == raw_unit)
        value, unit = (
            pl.when(known).then((raw * scale).round(0)).otherwise(value),
            pl.when(known).then(pl.lit(canonical_unit)).otherwise(unit),
        )
    return value, unit


def _not_measurements() -> list[tuple[pl.Expr, pl.Expr]]:
    """A latency or peak memory that is a number but not above zero, as written or once rounded to its canonical
    unit (`1e-320` ms is 0 ns): no measurement. Other metrics keep any number (a difference can be negative)."""
    problems = []
    measured = pl.col("metric_name").is_in(MEASURED_METRICS)
    for q, column in Y_COLUMNS.items():
        raw = pl.col(f"raw_p{q}")
        number = measured & raw.is_not_null() & raw.is_finite()
        canonical, unit = _canonical(raw)
        text = pl.col(column).str.strip_chars().str.slice(0, 80)
        problems.append((number & (raw <= 0), pl.format("{} {} is not above zero: not a measurement", pl.lit(column), text)))
        problems.append(
            (
                number & (raw > 0) & (canonical == 0),
                pl.format("{} {} rounds to 0 {}: not a measurement", pl.lit(column), text, unit),
            )
        )
    return problems


def _quantiles_disordered() -> tuple[pl.Expr, pl.Expr]:
    """y_value_20 <= y_value_50 <= y_value_80 does not hold (where both of a pair are numbers): the row is no run's
    measurement. Judged as written, which orders the canonical values the same way (scaling and rounding keep order)."""
    p20, p50, p80 = (pl.col(f"raw_p{q}") for q in ("20", "50", "80"))
    disordered = (p20.is_finite() & p50.is_finite() & (p20 > p50)) | (p50.is_finite() & p80.is_finite() & (p50 > p80))
    texts = [pl.col(Y_COLUMNS[q]).str.strip_chars().str.slice(0, 40) for q in ("20", "50", "80")]
    return disordered, pl.format("quantiles out of order: y_value_20 {} <= y_value_50 {} <= y_value_80 {} does not hold", *texts)


def _problems() -> list[tuple[pl.Expr, pl.Expr]]:
    """(whether a row has it, what the reason says) for each way a row fails; the y columns are parsed already."""
    empty = pl.concat_str([pl.when(_blank(c)).then(pl.lit(c)) for c in REQUIRED_VALUES], separator=", ", ignore_nulls=True)
    bad_time = (
        pl.col("timestamp").is_not_null()
        & (pl.col("timestamp") != "")
        & (~pl.col("timestamp").str.contains(TIMESTAMP_PATTERN) | pl.col("_observed_at").is_null())
    )
    problems = [
        (pl.any_horizontal([_blank(c) for c in REQUIRED_VALUES]), pl.format("required field(s) empty: {}", empty)),
        (bad_time, pl.format("timestamp {} is not in the form YYYY-MM-DD HH:MM:SS", pl.col("timestamp").str.slice(0, 40))),
        *[
            (
                ~pl.col(_y_missing(q)) & (pl.col(f"raw_p{q}").is_null() | pl.col(f"raw_p{q}").is_infinite()),
                pl.format("{} {} is neither a number nor missing", pl.lit(c), pl.col(c).str.slice(0, 80)),
            )
            for q, c in Y_COLUMNS.items()
        ],
        *_not_measurements(),
        _quantiles_disordered(),
        (pl.col("_config_error").is_not_null(), pl.col("_config_error")),
    ]
    return [(condition.fill_null(False), text) for condition, text in problems]


def is_bad() -> pl.Expr:
    # Cheap booleans for every row; the reason texts are built only for the rows that fail.
    return pl.any_horizontal(pl.col(PARSE_ERROR).is_not_null(), *[condition for condition, _ in _problems()]).alias("_bad")


def reasons() -> pl.Expr:
    reason = pl.concat_str([pl.when(condition).then(text) for condition, text in _problems()], separator="; ", ignore_nulls=True)
    # A row that could not be split into fields has no field worth judging.
    return pl.coalesce(pl.col(PARSE_ERROR), pl.when(reason != "").then(reason)).alias("_reason")


def raw_line(fields: tuple, raw: str | None) -> str:
    """A quarantined row's text: as read when it could not be split into fields, else its fields as the writer writes them."""
    return raw if raw is not None else render(fields)
