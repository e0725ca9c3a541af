"""SPEC section 8: series, their noise and their change points (no Dagster)."""

# What other stages may use: a module named here is public whole.
__all__ = ["series_tables"]
