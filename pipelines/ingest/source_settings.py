"""Where the source is and what of it to read: its address, branch, file pattern and streams (SPEC sections 1 and 7).

The one value the ingest's steps, the staging workers and the sensor's question share about the source; it opens
the source and says which source it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipelines.core import settings
from pipelines.ingest.source import Source, open_source
from pipelines.ingest.source_address import classify, normalized_source
from pipelines.ingest.source_streams import GitStreams, Stream


@dataclass(frozen=True)
class SourceSettings:
    source: str
    branch: str
    file_glob: str
    cache_dir: Path
    # The streams of a git source (SPEC section 7); the `ci` stream's repository, branch and file pattern.
    streams: tuple[str, ...] = ("data",)
    # None: the data's repository, upstream's CI branch; while both are None a repository without that branch has an
    # empty `ci` stream, else a missing branch is refused.
    ci_source: str | None = None
    ci_branch: str | None = None
    ci_file_glob: str = settings.DEFAULT_CI_FILE_GLOB

    def git_streams(self) -> tuple[Stream, ...]:
        optional = self.ci_source is None and self.ci_branch is None
        ci = Stream("ci", self.ci_source or self.source, self.ci_branch or settings.DEFAULT_CI_BRANCH, self.ci_file_glob, optional)
        by_name = {"data": Stream("data", self.source, self.branch, self.file_glob), "ci": ci}
        return tuple(by_name[name] for name in self.streams)

    def open(self) -> Source:
        if classify(self.source) != "git" or self.streams == ("data",):
            return open_source(self.source, self.cache_dir, self.branch, self.file_glob)
        return GitStreams(self.git_streams(), self.cache_dir)

    def identity(self) -> dict:
        """What makes this source this one (SPEC section 1: its address, and each stream's branch and file
        pattern): a warehouse holds the history of one identity."""
        if classify(self.source) != "git":
            return {"source": normalized_source(self.source)}
        return {
            "streams": [
                {"stream": s.name, "source": normalized_source(s.source), "branch": s.branch, "file_glob": s.file_glob}
                for s in self.git_streams()
            ]
        }

    def describe(self) -> str:
        if classify(self.source) != "git":
            return repr(self.source)
        return ", ".join(f"{s.name}: {s.source!r} branch {s.branch!r} files {s.file_glob!r}" for s in self.git_streams())
