"""warehouse.duckdb: its build from the tables (the statistics SQL) and the read-only session over it."""
