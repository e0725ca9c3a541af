"""Dagster-aware code that is not a definition: what a run should cover, running it from the CLI, dead runs."""
