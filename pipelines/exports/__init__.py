"""What leaves the warehouse: NDJSON documents, Liger CSVs rebuilt byte for byte, BMF files and the report."""
