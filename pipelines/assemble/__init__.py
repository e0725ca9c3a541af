"""From staged snapshots to the SPEC tables: deduplication, run identity, the table builders and their checks."""
