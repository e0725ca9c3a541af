"""Records to run and quarantine rows (SPEC sections 2 and 5): the rules, the quarantine reasons, the work done
once per distinct value, and the run columns described after deduplication."""

from pipelines.ingest.normalize.describe import SOURCES, describe
from pipelines.ingest.normalize.distinct_cache import DistinctCache
from pipelines.ingest.normalize.rules import UNIT_CONVERSIONS
from pipelines.ingest.normalize.snapshot_rows import normalize

# What other stages may use (tests/core/test_layers.py holds every stage to its neighbours' __all__).
__all__ = ["SOURCES", "UNIT_CONVERSIONS", "DistinctCache", "describe", "normalize"]
