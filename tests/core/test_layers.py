"""The packages under `pipelines/` form layers that only point down (docs/layout.md says the same).

From the bottom:

    core, storage          the shared vocabulary and the atomic files (one layer: either may import the other)
    ingest                 upstream to staged snapshots
    assemble               staged snapshots to the SPEC tables
    series                 SPEC section 8 (noise, change points)
    statistics             SPEC section 6 in warehouse.duckdb
    verdict                a contender judged against the history
    exports                NDJSON, the Liger CSVs, BMF, the report
    cli                    the command line's parts
    defs, orchestration    the Dagster wiring: they may import any stage, but never `cli`
    entry points           `__main__` (composes the CLI and the in-process run), bootstrap

The benchmark tools sit above all of it, in `bench/` beside `pipelines/`: the library never imports them, and they
import nothing of `tests/`.

A module imports only from its own layer or those below, `defs/` and `orchestration/` never from `cli/`, and no
modules import each other round a circle. Every import counts: at module level, inside a function and under
TYPE_CHECKING (a type-only import still ties the lower layer to the higher one). Importing a submodule runs its
package's `__init__` too; that implicit edge is left out, as every package would otherwise circle with its own.

A stage never reaches into another's internals: what one stage imports of another is that stage's surface, the
names its package (or subpackage) lists in `__all__`; a module named there is public whole. And every module's
name is unique (`defs/<domain>/assets.py`, Dagster's convention, aside), so a name in a log or a traceback says
which module it is.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

# The import graph the layers are checked against is the one code versions are derived from.
from pipelines.core.code_version import PACKAGE, graph, modules

BENCH = PACKAGE.parent / "bench"

# Layer order, bottom first: the name of a top-level package or module under pipelines/ -> its rank.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__init__", "core", "storage"),
    ("ingest",),
    ("assemble",),
    ("series",),
    ("statistics",),
    ("verdict",),
    ("exports",),
    ("cli",),
    ("defs", "definitions", "orchestration"),
    ("__main__", "bootstrap"),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
# The Dagster wiring runs the stages; the command line is a stage of its own beside it, and neither imports the other.
NEVER_FROM_CLI = ("defs", "definitions", "orchestration")


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            if RANK[layer(target)] > RANK[layer(module)]:
                found.append(f"{module} imports {target}: {layer(module)} is below {layer(target)}")
            elif layer(module) in NEVER_FROM_CLI and layer(target) == "cli":
                found.append(f"{module} imports {target}: the Dagster wiring never imports cli/ (move what it needs below)")
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One circle (its modules in import order, the first repeated last) per strongly connected group of modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the package is far too small for recursion to matter
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_circle(edges, group) for group in groups]


def _circle(edges: dict[str, set[str]], group: set[str]) -> list[str]:
    """The shortest path from the group's first module back to itself, within the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(edges[node] & group):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"{sorted(group)} is strongly connected but has no circle through {start}")


def test_every_module_has_a_layer():
    unplaced = sorted({layer(module) for module in modules()} - RANK.keys())
    assert not unplaced, f"give these a layer in LAYERS (tests/core/test_layers.py) and docs/layout.md: {unplaced}"


def test_no_module_imports_from_a_layer_above_it_or_from_cli():
    found = upward_imports(graph())
    assert not found, "imports against the layers:\n" + "\n".join(found)


def test_no_import_circle():
    found = cycles(graph())
    assert not found, "import circles:\n" + "\n".join(" -> ".join(circle) for circle in found)


# The stages: each may use of another only what that one's package lists in __all__. core and storage are the shared
# vocabulary (every module public); cli, defs and orchestration are the wiring that calls the stages.
STAGES = ("ingest", "assemble", "series", "statistics", "verdict", "exports")


def surface(root: Path, package: str) -> set[str] | None:
    """The names `package`'s __init__ lists in `__all__` (None when it is not a package of `root`)."""
    init = root.parent.joinpath(*package.split("."), "__init__.py")
    if not init.is_file():
        return None
    for node in ast.parse(init.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            return set(ast.literal_eval(node.value))
    return set()


def internal_imports(root: Path) -> list[str]:
    """Imports by one stage of another's names or modules its packages do not list in `__all__`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if len(parts) < 2 or parts[1] not in STAGES:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith(root.name + "."):
                continue
            target = node.module.split(".")
            if target[1] not in STAGES or target[1] == parts[1]:
                continue
            names = surface(root, node.module)
            if names is None:  # `from pipelines.ingest.staging import x`: a module, public when its package names it
                package, module = node.module.rpartition(".")[::2]
                if module in (surface(root, package) or set()):
                    continue
                names = set()
            hidden = sorted(alias.name for alias in node.names if alias.name not in names)
            if hidden:
                found.append(f"{'.'.join(parts)} imports {', '.join(hidden)} from {node.module}: not in its __all__")
    return found


def duplicate_names(root: Path) -> list[str]:
    """Module names (a file's stem; a package's own) given to more than one module outside defs/."""
    seen: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] == "defs" or path.name == "__main__.py":
            continue
        name = path.parent.name if path.name == "__init__.py" else path.stem
        seen.setdefault(name, []).append(str(relative))
    return [f"{name}: {', '.join(paths)}" for name, paths in sorted(seen.items()) if len(paths) > 1 and name != root.name]


def test_no_stage_reaches_into_another_stages_internals():
    found = internal_imports(PACKAGE)
    assert not found, "imports of another stage's internals (use its package's surface, or list the name in its __all__):\n" + "\n".join(
        found
    )


def test_every_module_name_is_unique_outside_defs():
    found = duplicate_names(PACKAGE)
    assert not found, "module names used twice (rename one):\n" + "\n".join(found)


def test_the_surface_and_name_checks_see_a_reach_into_internals_and_a_repeated_name(tmp_path):
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "ingest/__init__.py": '__all__ = ["staging"]\n',
            "ingest/staging.py": "",
            "ingest/parse/__init__.py": 'from pipelines.ingest.parse.header import read_header\n__all__ = ["read_header"]\n',
            "ingest/parse/header.py": "def read_header(): ...\nUTF = 1\n",
            "assemble/__init__.py": "",
            "assemble/fine.py": "from pipelines.ingest.parse import read_header\nfrom pipelines.ingest.staging import x\nfrom pipelines.core import y\n",
            "assemble/reach.py": "from pipelines.ingest.parse.header import UTF\nfrom pipelines.ingest.parse import UTF\n",
            "exports/header.py": "",
            "defs/a/assets.py": "",
            "defs/b/assets.py": "",
        },
    )
    assert internal_imports(root) == [
        "pipelines.assemble.reach imports UTF from pipelines.ingest.parse.header: not in its __all__",
        "pipelines.assemble.reach imports UTF from pipelines.ingest.parse: not in its __all__",
    ]
    assert duplicate_names(root) == ["header: exports/header.py, ingest/parse/header.py"]


def top_level_imports(path: Path, root: Path) -> set[str]:
    """The top-level names `path` (under `root`) imports, wherever the import sits: `bench` for
    `from bench.report import TARGETS`; a relative import names `root` itself."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add(root.name if node.level else (node.module or "").split(".")[0])
    return found


def importers_of(root: Path, names: set[str]) -> list[str]:
    """The modules under `root` that import any of `names`, as paths from `root`'s parent."""
    return [str(path.relative_to(root.parent)) for path in sorted(root.rglob("*.py")) if top_level_imports(path, root) & names]


# The suite's modules import each other by their bare names (`from conftest import liger_row`), tests/ being on sys.path.
TEST_MODULES = {"tests"} | {path.stem for path in (PACKAGE.parent / "tests").rglob("*.py")}


def test_the_library_never_imports_its_benchmark_tools():
    found = importers_of(PACKAGE, {"bench"})
    assert not found, f"these modules of the library import bench/ (move what they need into pipelines/): {found}"


def test_the_benchmark_tools_import_nothing_from_the_tests():
    assert sorted(BENCH.glob("*.py")), "bench/ is missing or holds no module"
    found = importers_of(BENCH, TEST_MODULES)
    assert not found, f"these benchmark modules import from tests/ (move what they share into bench/): {found}"


def test_the_import_scans_see_an_import_inside_a_function_and_a_relative_one(tmp_path):
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "core/__init__.py": "def later():\n    from bench import synthetic\n",
            "core/errors.py": "from . import later\nimport conftest\n",
        },
    )
    assert importers_of(root, {"bench"}) == ["pipelines/core/__init__.py"]
    assert importers_of(root, {"pipelines"}) == ["pipelines/core/errors.py"]
    assert importers_of(root, TEST_MODULES) == ["pipelines/core/errors.py"]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pipelines" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pipelines"


@pytest.fixture
def tree(tmp_path):
    """A small package shaped like `pipelines/` with the faults the checks exist for."""
    return _write(
        tmp_path,
        {
            "__init__.py": "",
            "core/__init__.py": "",
            "core/errors.py": "class UserError(Exception): ...\n",
            "ingest/__init__.py": "",
            "ingest/steps.py": "from pipelines.ingest import pool\n\ndef later():\n    from pipelines.assemble.assembly import build\n",
            "ingest/pool.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .steps import later\n",
            "assemble/__init__.py": "",
            "assemble/assembly.py": "from ..core.errors import UserError\n\ndef build(): ...\n",
            "cli/__init__.py": "",
            "cli/output.py": "from pipelines.core import errors\n",
            "defs/__init__.py": "",
            "defs/assets.py": "import pipelines.cli.output\nfrom pipelines.assemble import tables\n",
        },
    )


def test_the_checks_find_an_upward_import_inside_a_function_and_an_import_of_cli(tree):
    assert upward_imports(graph(tree)) == [
        "pipelines.defs.assets imports pipelines.cli.output: the Dagster wiring never imports cli/ (move what it needs below)",
        "pipelines.ingest.steps imports pipelines.assemble.assembly: ingest is below assemble",
    ]


def test_the_checks_find_a_circle_made_by_a_type_only_relative_import(tree):
    assert graph(tree)["pipelines.assemble.assembly"] == {"pipelines.core.errors"}
    assert cycles(graph(tree)) == [["pipelines.ingest.pool", "pipelines.ingest.steps", "pipelines.ingest.pool"]]
