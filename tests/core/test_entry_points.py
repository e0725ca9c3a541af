"""The settings are read once, by an entry point, and passed down; the Dagster APIs used are Dagster's public ones.

An entry point is a module a process starts in: the command line (`pipelines/__main__.py`), the Dagster definitions
as `dg dev`, the daemon and the code servers load them (`pipelines/definitions.py`), `bootstrap`, and the bench (every
phase is a process of its own). Any other module that read the environment would read settings behind the back of
the `Settings` it was handed (a test's, the CLI's), and one that read it at import would fix them before any entry
point could. Dagster's private modules (`dagster._...`) change without notice between releases.
"""

from __future__ import annotations

import ast
from pathlib import Path

from pipelines.core.settings import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "pipelines"
ENTRY_POINTS = {"pipelines/__main__.py", "pipelines/definitions.py", "pipelines/bootstrap.py"}
# Modules that hand the environment on to a child process without reading a setting from it.
PASSES_THE_ENVIRONMENT_ON = {
    "pipelines/ingest/source/git_source.py": "git inherits it (its HOME, proxy and locale variables)",
    # Writes, not reads: Dagster takes this switch only from the environment, when it creates a run.
    "pipelines/orchestration/materialize.py": "sets DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS for the runs it creates",
    # No setting of the pipeline's: polars' allocator takes its own only from the environment, when polars loads.
    "pipelines/core/allocator.py": "puts _RJEM_MALLOC_CONF before polars loads, keeping one given in the environment",
}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(PROJECT_ROOT).as_posix()


def environment_reads(tree: ast.AST) -> list[str]:
    """Each read of the environment in `tree`: `os.environ`, `getenv`, `environ` imported from os, `settings.read`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb") and getattr(node.value, "id", None) == "os":
            found.append(f"os.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and {a.name for a in node.names} & {"environ", "getenv"}:
            found.append(f"from os import environ/getenv (line {node.lineno})")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "read":
            if getattr(node.func.value, "id", None) == "settings":
                found.append(f"settings.read (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module == "pipelines.core.settings" and "read" in {a.name for a in node.names}:
            found.append(f"from pipelines.core.settings import read (line {node.lineno})")
    return found


def test_only_the_entry_points_read_the_environment():
    readers = {}
    for path in _modules():
        name = _name(path)
        if name in ENTRY_POINTS or name in PASSES_THE_ENVIRONMENT_ON or name == "pipelines/core/settings.py":
            continue
        if found := environment_reads(ast.parse(path.read_text(encoding="utf-8"))):
            readers[name] = found
    assert readers == {}, f"read the environment outside an entry point (take a Settings instead): {readers}"


def test_the_settings_module_reads_only_the_mapping_it_is_handed():
    assert environment_reads(ast.parse((PACKAGE / "core" / "settings.py").read_text(encoding="utf-8"))) == []


def test_the_rule_sees_every_way_of_reading_the_environment():
    text = "import os\nfrom os import getenv\nos.environ['A']\nos.getenv('B')\nsettings.read(os.environ)\n"
    assert len(environment_reads(ast.parse(text))) == 5


def private_dagster_imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        found += [f"{name} (line {node.lineno})" for name in names if name.split(".")[0].startswith("dagster") and "._" in name]
    return found


def test_no_module_imports_a_private_dagster_module():
    private = {}
    for path in [*_modules(), *sorted((PROJECT_ROOT / "bench").rglob("*.py"))]:
        if found := private_dagster_imports(ast.parse(path.read_text(encoding="utf-8"))):
            private[_name(path)] = found
    assert private == {}, f"import only what `dagster` exports (dir(dagster), docs.dagster.io): {private}"


def test_the_private_import_rule_sees_both_forms():
    text = "import dagster._core.events\nfrom dagster._core.launcher import X\nfrom dagster import asset\nimport dagster_shared.x\n"
    assert len(private_dagster_imports(ast.parse(text))) == 2
