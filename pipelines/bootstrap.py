"""Set-up and entry point for a fresh machine, using only the standard library.

`python3 -m pipelines.bootstrap materialize` creates `.venv` at the project root
when it is missing (or when the lock file changed), installs the pinned
dependencies from `requirements.lock` and the project, then runs
`python -m pipelines materialize` in it. `python3 -m pipelines.bootstrap test`
does the same set-up and runs the test suite; `... lint` runs ruff's checks, then
sqlfluff over `sql/`. Other arguments pass through:
`python3 -m pipelines.bootstrap show-run RUN_ID`, `... test -k source`.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
LOCK = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"


def _python() -> Path:
    return VENV / "bin" / "python"


def _stamp() -> str:
    digest = hashlib.sha256(LOCK.read_bytes() + PYPROJECT.read_bytes()).hexdigest()[:16]
    return f".installed-{digest}"


def ensure_venv() -> Path:
    marker = VENV / _stamp()
    if marker.exists() and _python().exists():
        return _python()
    if not _python().exists():
        print(f"creating {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    print("installing pinned dependencies from requirements.lock", flush=True)
    pip = [str(_python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-r", str(LOCK)], check=True)
    subprocess.run([*pip, "--no-deps", "-e", f"{ROOT}[test]"], check=True)
    for old in VENV.glob(".installed-*"):
        old.unlink()
    marker.touch()
    return _python()


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    python = ensure_venv()
    if argv[0] == "test":
        return subprocess.run([str(python), "-m", "pytest", *argv[1:]], cwd=ROOT).returncode
    if argv[0] == "lint":
        ruff, sqlfluff = str(VENV / "bin" / "ruff"), str(VENV / "bin" / "sqlfluff")
        checks = [[ruff, "check", "."], [ruff, "format", "--check", "."], [sqlfluff, "lint", "sql/"]]
        return next((code for code in (subprocess.run(check, cwd=ROOT).returncode for check in checks) if code), 0)
    # In the user's folder: a relative LIGER_SOURCE means that folder (the warehouse's folders mean the checkout's).
    return subprocess.run([str(python), "-m", "pipelines", *argv]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
