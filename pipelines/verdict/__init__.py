"""A contender's verdict (SPEC section 9): a user's own benchmark CSV judged against the warehouse's history.

`contender` reads the CSV with the ingest's pure code (nothing is staged or written), `noise` gives each
series' noise, `judge` holds the rules, `verdict` runs them in one read-only session, `render` writes text,
markdown and JSON. No Dagster here: `pipelines/defs/verdict/` wires it as a job.
"""
