"""What of the settings names the source: its address, branch, file pattern and streams (SPEC sections 1 and 7).

The ingest's steps, the staging workers and the sensor's question all take the one `Settings`; these open the source
it names and say which source that is.
"""

from __future__ import annotations

from pipelines.core import settings
from pipelines.core.settings import Settings
from pipelines.ingest.source import Source, open_source
from pipelines.ingest.source.address import classify, normalized_source
from pipelines.ingest.source.streams import GitStreams, Stream


def git_streams(current: Settings) -> tuple[Stream, ...]:
    """The streams a git source is read as. While LIGER_CI_SOURCE and LIGER_CI_BRANCH are both unset, a repository
    without upstream's CI branch has an empty `ci` stream; else a missing branch is refused."""
    optional = current.ci_source is None and current.ci_branch is None
    ci = Stream("ci", current.ci_source or current.source, current.ci_branch or settings.DEFAULT_CI_BRANCH, current.ci_file_glob, optional)
    by_name = {"data": Stream("data", current.source, current.branch, current.file_glob), "ci": ci}
    return tuple(by_name[name] for name in current.streams)


def source_of(current: Settings) -> Source:
    if classify(current.source) != "git" or current.streams == ("data",):
        return open_source(current.source, current.cache_dir, current.branch, current.file_glob)
    return GitStreams(git_streams(current), current.cache_dir)


def identity(current: Settings) -> dict:
    """What makes this source this one (SPEC section 1: its address, and each stream's branch and file pattern): a
    warehouse holds the history of one identity."""
    if classify(current.source) != "git":
        return {"source": normalized_source(current.source)}
    return {
        "streams": [
            {"stream": s.name, "source": normalized_source(s.source), "branch": s.branch, "file_glob": s.file_glob}
            for s in git_streams(current)
        ]
    }


def describe(current: Settings) -> str:
    if classify(current.source) != "git":
        return repr(current.source)
    return ", ".join(f"{s.name}: {s.source!r} branch {s.branch!r} files {s.file_glob!r}" for s in git_streams(current))
