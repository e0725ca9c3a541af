"""What leaves the warehouse: NDJSON documents, Liger CSVs rebuilt byte for byte, BMF files and the report."""

# Nothing here is another stage's to use: the command line and the Dagster assets call it.
__all__: list[str] = []
