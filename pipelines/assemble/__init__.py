"""From staged snapshots to the SPEC tables: deduplication, run identity, the table builders and their checks."""

from pipelines.assemble.conflicts import COMPARED

# What other stages may use (tests/core/test_layers.py holds every stage to its neighbours' __all__).
__all__ = ["COMPARED"]
