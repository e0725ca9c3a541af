"""The data contract's vocabulary, shared by every stage: schemas, canonical JSON, workloads, catalogs, documents, settings."""
