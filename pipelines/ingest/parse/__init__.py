"""A Liger CSV split into records (SPEC section 5's first half): its header, the fast and the careful readers,
the layout that rebuilds the file byte for byte, and the lines of a file refused whole."""

from pipelines.ingest.parse.fast import FastPathRefused
from pipelines.ingest.parse.header import UTF8_BOM, NotLigerCsv, read_header
from pipelines.ingest.parse.record_layout import RecordLayout, render, render_all
from pipelines.ingest.parse.records import iter_records

# What other stages may use (tests/core/test_layers.py holds every stage to its neighbours' __all__).
__all__ = ["UTF8_BOM", "FastPathRefused", "NotLigerCsv", "RecordLayout", "iter_records", "read_header", "render", "render_all"]
