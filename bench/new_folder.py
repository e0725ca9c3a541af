"""One new CI folder (issue 29): a copy of the source whose `gh-pages` is held back to the commit before the one that
added its newest `benchmarks/<commit>/` folder, and moved on to the branch's head again, as upstream's weekly push does.

The folders a documentation deploy deletes and restores are added again by the restore; a folder's first addition is
when it arrived, so the newest folder is the one whose first addition is the latest."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

CI_BRANCH = "gh-pages"
CI_FILES = "benchmarks/*/benchmark.csv"


@dataclass(frozen=True)
class HeldBack:
    folder: str  # the newest folder's file, as gh-pages names it
    added_in: str  # the commit that first added it
    held: str  # gh-pages without it: that commit's parent
    head: str  # gh-pages as the source has it


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def copy_source(source: Path, target: Path) -> Path:
    """A bare copy of `source` (a repository or a bundle) with every branch, to move gh-pages in."""
    subprocess.run(["git", "clone", "--quiet", "--mirror", str(source), str(target)], check=True)
    return target


def newest_folder(repo: Path) -> HeldBack | None:
    """The newest CI folder of `repo`'s gh-pages, or None when the branch is missing or its first commit adds it."""
    if not _git(repo, "branch", "--list", CI_BRANCH).strip():
        return None
    first_added: dict[str, str] = {}
    commit = ""
    # Oldest first, each commit's added files after its hash: a file's first line here is its first addition.
    for line in _git(repo, "log", "--reverse", "--diff-filter=A", "--format=%H", "--name-only", CI_BRANCH, "--", CI_FILES).splitlines():
        if len(line) == 40 and ":" not in line and "/" not in line:
            commit = line
        elif line:
            first_added.setdefault(line, commit)
    if not first_added:
        return None
    order = _git(repo, "rev-list", "--first-parent", CI_BRANCH).split()
    folder, added_in = min(first_added.items(), key=lambda item: order.index(item[1]) if item[1] in order else len(order))
    parents = _git(repo, "rev-list", "--parents", "-n", "1", added_in).split()[1:]
    if not parents:
        return None
    return HeldBack(folder, added_in, parents[0], _git(repo, "rev-parse", CI_BRANCH).strip())


def move_branch(repo: Path, commit: str) -> None:
    _git(repo, "update-ref", f"refs/heads/{CI_BRANCH}", commit)
