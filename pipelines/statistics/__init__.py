"""The statistics of SPEC section 6 in warehouse.duckdb: the file built from the tables, its statistics SQL run, published as a build, and read read-only."""

# What other stages may use: a module named here is public whole.
__all__ = ["database_publish", "db"]
