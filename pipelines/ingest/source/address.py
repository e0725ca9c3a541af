"""Which kind of source LIGER_SOURCE names (git, CSV file or CSV URL), and its one spelling.

Every value that reaches git from the user is checked first: no option-looking
argument, no exotic transport.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

from pipelines.ingest.source.listing import SourceError, unreachable

_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/].*")
# `<transport>::<address>` makes git run a remote helper (`ext::` runs any command).
_REMOTE_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
BUNDLE_SIGNATURES = (b"# v2 git bundle", b"# v3 git bundle")


def classify(source: str) -> str:
    """'git', 'csv-file' or 'csv-url'; anything else is refused with a SourceError."""
    if not source or source.startswith("-") or _REMOTE_HELPER.match(source):
        raise SourceError(f"LIGER_SOURCE {source!r} is not a source: give a git URL, a local path or an http(s) URL")
    parsed = urllib.parse.urlparse(source)
    scheme = parsed.scheme.lower()
    if scheme in ("http", "https"):
        return "csv-url" if parsed.path.lower().endswith(".csv") else "git"
    if scheme in ("ssh", "git+ssh", "file"):
        return "git"
    if _SCP_LIKE.match(source):
        return "git"
    if scheme and len(scheme) > 1:
        raise SourceError(
            f"LIGER_SOURCE scheme {scheme!r} is not accepted: use https, ssh or file git URLs, a local path, or an http(s) URL of a CSV"
        )
    path = Path(source).expanduser()
    if path.is_dir():
        return "git"
    if path.is_file():
        with open(path, "rb") as handle:
            return "git" if handle.read(16).startswith(BUNDLE_SIGNATURES) else "csv-file"
    raise unreachable(source, "no such file or directory")


def git_url(source: str) -> str:
    parsed = urllib.parse.urlparse(source)
    if parsed.scheme or _SCP_LIKE.match(source):
        return source
    return str(Path(source).expanduser().resolve())


def normalized_source(source: str) -> str:
    """One spelling per source: a local path (or file URL) absolute and resolved, another URL as given."""
    parsed = urllib.parse.urlparse(source)
    if parsed.scheme.lower() == "file" and parsed.netloc in ("", "localhost"):
        return str(Path(urllib.parse.unquote(parsed.path)).resolve())
    return git_url(source)
