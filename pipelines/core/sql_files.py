"""Where the SQL is: the files of `sql/`, read as package resources so an installed copy finds them too.

`sql/` sits at the top of the repository, by role: `macros.sql` (the rules every query shares),
`statistics/`, `views/` (for readers), `checks/`, `previews/` (of the statistics), `report/` and
`queries/` (the CLI's).
`pipelines/sql` is a link to it: a checkout reads it through the link, and a wheel carries its files
as package data (`pyproject.toml`), so the same `importlib.resources` path serves both.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

SUFFIX = ".sql"


def _root() -> Traversable:
    return resources.files("pipelines").joinpath("sql")


def _file(name: str) -> Traversable:
    *folders, file = name.split("/")
    place = _root()
    for folder in folders:
        place = place.joinpath(folder)
    return place.joinpath(file + SUFFIX)


def text(name: str) -> str:
    """The SQL of `sql/<name>.sql`; `name` may hold a folder (`statistics/run_noise`, `checks/...`)."""
    return _file(name).read_text(encoding="utf-8")


def description(name: str) -> str:
    """The comment block that opens `sql/<name>.sql`, as prose."""
    lines = []
    for line in text(name).splitlines():
        if not line.startswith("--"):
            break
        lines.append(line.removeprefix("--").strip())
    return "\n".join(lines)


def names(folder: str = "") -> list[str]:
    """Every `sql/<folder>/**.sql` as the name `text` takes (`report/report_runs`), sorted."""
    folder = folder.strip("/")
    start = _root()
    for part in filter(None, folder.split("/")):
        start = start.joinpath(part)
    prefix = f"{folder}/" if folder else ""
    return sorted(prefix + name for name in _walk(start))


def _walk(folder: Traversable) -> list[str]:
    found = []
    for entry in folder.iterdir():
        if entry.is_dir():
            found.extend(f"{entry.name}/{name}" for name in _walk(entry))
        elif entry.name.endswith(SUFFIX):
            found.append(entry.name.removesuffix(SUFFIX))
    return found
