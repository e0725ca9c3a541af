"""SPEC section 8: series, their noise and their change points (no Dagster)."""
