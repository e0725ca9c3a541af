"""One module names every path of the warehouse folder (`pipelines.core.layout`); nothing else in `pipelines/` spells one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pipelines.core import layout
from pipelines.core.code_version import PACKAGE

# The names no module but layout may write as a string (a docstring or a comment may mention them).
NAMES = ("_staging", "_source.json", "warehouse.duckdb", ".writer.lock", "_builds", "manifest.json", "meta.json", ".liger-warehouse")
# A name as a word of its own: `check_builds` is not `_builds`.
SPELLED = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(name) for name in NAMES) + r")(?![\w-])")
OWNER = PACKAGE / "core" / "layout.py"


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the Constant nodes that are docstrings (of the module, a class or a function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def spelled(path: Path, root: Path = PACKAGE.parent) -> list[str]:
    """Each string literal of `path` (outside docstrings) that holds one of NAMES, as `file:line: name`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = docstrings(tree)
    return [
        f"{path.relative_to(root)}:{node.lineno}: {name!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        for name in SPELLED.findall(node.value)
    ]


def test_no_module_but_layout_spells_a_warehouse_path():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != OWNER for hit in spelled(path)]
    assert found == [], "use pipelines.core.layout instead of spelling these paths:\n" + "\n".join(found)


def test_the_check_finds_a_spelled_path(tmp_path):
    module = tmp_path / "pipelines" / "stage.py"
    module.parent.mkdir()
    module.write_text(
        '"""Reads warehouse.duckdb."""\n\n# the _staging folder\nPATH = "_staging"\nNAME = f"{1}/warehouse.duckdb"\nJOB = "check_builds"\n'
    )
    assert spelled(module, tmp_path) == ["pipelines/stage.py:4: '_staging'", "pipelines/stage.py:5: 'warehouse.duckdb'"]


def test_layout_paths_are_the_warehouse_on_disk(tmp_path):
    # The names spelled out: a change here changes every existing warehouse's bytes on disk.
    paths = layout.Layout(tmp_path)
    assert paths.table("runs") == tmp_path / "runs.parquet"
    assert paths.table_folder("runs") == tmp_path / "runs"
    assert paths.database == tmp_path / "warehouse.duckdb"
    assert paths.listing == tmp_path / "_source.json"
    assert paths.staging == tmp_path / "_staging"
    assert paths.staged("main:a.csv@abc") == tmp_path / "_staging" / "2b67f0657001a187cb6fcd46"
    assert paths.lock == tmp_path / ".writer.lock"
    assert paths.builds("tables") == tmp_path / "_builds" / "tables"
    assert paths.exports == tmp_path / "exports"
    assert paths.export("bmf") == tmp_path / "exports" / "bmf"
    assert paths.report == tmp_path / "report"
    assert layout.owner_marker(tmp_path) == tmp_path / ".liger-warehouse"
    assert (layout.MANIFEST, layout.FILES, layout.CURRENT, layout.PREVIOUS) == ("manifest.json", "files", "current", "previous")
    assert (layout.META, layout.WORKLOADS) == ("meta.json", "workloads.parquet")
    assert layout.part_file("quarantine", 3) == "quarantine-00003.parquet"
    assert layout.export_path(layout.LIGER_CSV_EXPORT) == "exports/liger_csv"
    assert layout.DOCUMENT_FILES == ("runs.ndjson", "protocols.ndjson", "environments.ndjson")
    assert layout.STAGES == ("tables", "database", "resource_documents", "latest_liger_csvs", "bmf_exports", "report")


def test_a_layout_of_a_string_is_of_its_path(tmp_path):
    assert layout.Layout(str(tmp_path)).database == tmp_path / "warehouse.duckdb"


def test_parts_are_found_in_the_order_they_were_written(tmp_path):
    for index in (10, 2, 0):
        (tmp_path / layout.part_file("rows", index)).touch()
    (tmp_path / layout.part_file("quarantine", 1)).touch()
    assert [p.name for p in layout.parts(tmp_path, "rows")] == ["rows-00000.parquet", "rows-00002.parquet", "rows-00010.parquet"]
