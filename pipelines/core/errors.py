"""The error a user can act on, shared by every layer that raises one.

`python -m pipelines` writes its message as the one line the user sees (pipelines/cli/cli_output.py
and `__main__`); the in-process run (pipelines/orchestration/materialize.py) raises it too, so it lives
below both.
"""


class UserError(Exception):
    """A failure the user can act on; its message is the whole line they see (exit code 1)."""

    exit_code = 1
