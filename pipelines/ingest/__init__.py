"""From upstream to staged snapshots: the source, parsing, normalization (SPEC section 2) and staging."""

# What other stages may use: a module named here is public whole (the staged folder is the ingest's output).
__all__ = ["staging"]
