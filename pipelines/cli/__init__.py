"""The command line's own parts: one-line errors, query output, the export and report commands."""
