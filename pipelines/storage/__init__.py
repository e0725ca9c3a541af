"""Files that are whole or absent: atomic writes, the commit journal, Parquet, freshness stamps."""
