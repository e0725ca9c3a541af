"""A contender's verdict (SPEC section 9): a user's own benchmark CSV judged against the warehouse's history.

`contender` reads the CSV with the ingest's pure code (nothing is staged or written), `verdict_noise` gives each
series' noise, `judge` holds the rules, `against_history` runs them in one read-only session, `render` writes text,
markdown and JSON. No Dagster here: `pipelines/defs/verdict/` wires it as a job.
"""

# Nothing here is another stage's to use: the command line and the Dagster job call it.
__all__: list[str] = []
