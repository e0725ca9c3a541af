"""Each stage's code version, derived from the code itself: a digest of the source of every module the stage
runs (its entry modules and all they import from `pipelines`, found by reading the import statements) and of
the SQL files it runs. Nobody bumps a number: a change to any of those files is a new code version, which
Dagster shows as the asset's code version changing and which every build key holds (`storage.builds`).

A module counts by what it does, not how it is written down: its digest is that of its syntax tree without
comments, docstrings, line numbers or formatting, so a comment or a reflowed docstring restages nothing. A SQL
file counts whole: its header comment is the table's comment in warehouse.duckdb, which is data.

The same import graph is what `tests/core/test_layers.py` checks the layers against.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.metadata
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from pipelines.core import sql_files
from pipelines.storage import store

PACKAGE = Path(__file__).resolve().parent.parent


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every Python module under `root` (the `pipelines/sql` link holds none), by dotted name."""
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that `name` imports, wherever the import statement sits (in a function, under
    TYPE_CHECKING). Importing a submodule runs its package's `__init__` too; that implicit edge is left out."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for level, module, names in _read(path).imports:
        if level:
            base = package.split(".")[: len(package.split(".")) - level + 1]
            source = ".".join([*base, module] if module else base)
        elif names is None:  # `import a.b, c`
            found |= set(module.split(","))
            continue
        else:
            source = module
        # `from pipelines.ingest import staging` imports the module staging; `from pipelines.ingest.steps import sync`,
        # steps; `from pipelines.ingest.parse import render`, the module the package's __init__ re-exports it from.
        reexported = _reexports(source, known)
        for alias in names:
            found.add(f"{source}.{alias}" if f"{source}.{alias}" in known else reexported.get(alias, source))
    return {module for module in found if module in known and module != name}


def _reexports(package: str, known: dict[str, Path]) -> dict[str, str]:
    """The names a package's __init__ imports from its own modules (its public surface), each with that module:
    a stage that uses one name of another's surface runs that module, not the whole package."""
    path = known.get(package)
    if path is None or path.name != "__init__.py":
        return {}
    return {
        alias: module
        for level, module, names in _read(path).imports
        if not level and names is not None and module.startswith(package + ".")
        for alias in names
    }


class _Module(NamedTuple):
    imports: tuple[tuple[int, str, tuple[str, ...] | None], ...]  # (level, module, names; None for `import`)
    behaviour: str


def _read(path: Path) -> _Module:
    stat = path.stat()
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)


# Parsing the package is most of a command's start (0.3 s on 2 cores), so each module's parse is kept across processes
# beside Python's bytecode, under the same rule as the bytecode: valid while the file's mtime and size are the same,
# and for one Python version (ast.dump's text depends on it).
DISK_CACHE = PACKAGE / "__pycache__" / f"code_version.{sys.implementation.cache_tag}.json"


class _Parses(NamedTuple):
    entries: dict[str, list]  # path -> [mtime_ns, size, imports, behaviour]
    changed: list[str]  # the paths parsed anew since it was read


@functools.cache
def _disk() -> _Parses:
    try:
        loaded = json.loads(DISK_CACHE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        loaded = {}
    return _Parses(loaded if isinstance(loaded, dict) else {}, [])


def _save_disk(keep: Iterable[str]) -> None:
    """Write the parses of the modules `keep` back when one was parsed anew; a folder that cannot be written is no error
    (the next process parses again)."""
    cached = _disk()
    if not cached.changed:
        return
    cached.changed.clear()
    kept = {path: cached.entries[path] for path in keep if path in cached.entries}
    with contextlib.suppress(OSError):
        store.write_bytes_atomic(DISK_CACHE, json.dumps(kept).encode())


@functools.lru_cache(maxsize=1024)
def _parsed(path: str, mtime_ns: int, size: int) -> _Module:
    """One parse and one walk per version of a file (and none while DISK_CACHE holds that version): parsing is most
    of what a code version costs, and the import graph and the digest read the same tree."""
    ours = Path(path).is_relative_to(PACKAGE)
    entry = _disk().entries.get(path) if ours else None
    if isinstance(entry, list) and len(entry) == 4 and entry[:2] == [mtime_ns, size]:
        try:
            imports = tuple((int(level), str(module), None if names is None else tuple(names)) for level, module, names in entry[2])
            return _Module(imports, str(entry[3]))
        except (TypeError, ValueError):
            pass  # an entry not written by this code: parse the file
    module = _parse(path)
    if ours:
        _disk().entries[path] = [mtime_ns, size, module.imports, module.behaviour]
        _disk().changed.append(path)
    return module


def _parse(path: str) -> _Module:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    found: list[tuple[int, str, tuple[str, ...] | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.append((0, ",".join(alias.name for alias in node.names), None))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", tuple(alias.name for alias in node.names)))
        elif isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and _docstring(node):
            # A docstring holds no import and changes nothing a stage computes.
            node.body = node.body[1:] or [ast.Pass()]
    # ast.dump holds no comment, line number or layout; its text depends on the Python version, which computes too.
    return _Module(tuple(found), hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest())


def _docstring(node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = node.body[0] if node.body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def behaviour(path: Path) -> str:
    """What decides what a module does: a digest of its syntax tree without docstrings."""
    return _read(path).behaviour


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


@functools.cache
def _package_graph() -> dict[str, frozenset[str]]:
    known = modules()
    edges = {name: frozenset(imports(name, path, known)) for name, path in known.items()}
    _save_disk(str(path) for path in known.values())
    return edges


def closure(entries: Iterable[str], leave_out: Iterable[str] = ()) -> list[str]:
    """The modules `entries` run: themselves and every module they import, transitively, sorted. A module
    under one of `leave_out` (a dotted prefix) is neither counted nor followed: code a stage imports but that
    belongs to another asset's version (the series statistics' modules, for the SQL statistics)."""
    edges = _package_graph()
    excluded = tuple(leave_out)
    seen: set[str] = set()
    frontier = [entry for entry in entries]
    while frontier:
        module = frontier.pop()
        if module in seen or any(module == prefix or module.startswith(prefix + ".") for prefix in excluded):
            continue
        if module not in edges:
            raise KeyError(f"{module} is not a module of pipelines")
        seen.add(module)
        frontier.extend(edges[module])
    return sorted(seen)


def code_version(
    entries: Iterable[str],
    sql: Iterable[str] = (),
    leave_out: Iterable[str] = (),
    libraries: Iterable[str] = (),
    files: Iterable[Path] = (),
    format_version: str = "",
) -> str:
    """A digest of the behaviour of `closure(entries, leave_out)`, of the named SQL files (as `sql_files` names them),
    of other `files` the stage reads as code (the catalogs), of the versions of the `libraries` whose
    results the stage writes as they compute them (ruptures' change points), and of the stage's explicit
    `format_version` (pipelines/stages.py)."""
    known = modules()
    digest = hashlib.sha256(f"format {format_version}\0".encode() if format_version else b"")
    for name in closure(entries, leave_out):
        digest.update(f"module {name}\0{behaviour(known[name])}\0".encode())
    for name in sorted(set(sql)):
        digest.update(f"sql {name}\0{sql_files.text(name)}\0".encode())
    for path in sorted(files):
        digest.update(f"file {path.name}\0".encode() + path.read_bytes() + b"\0")
    for library in sorted(libraries):
        digest.update(f"library {library} {importlib.metadata.version(library)}\0".encode())
    return digest.hexdigest()[:16]
