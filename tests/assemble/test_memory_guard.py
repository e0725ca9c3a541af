"""Memory that cannot drift again (issue 29): normalization (sync, stage, build_tables, as the bench's normalize phase
runs them) of 200k and of 600k synthetic rows, each in a fresh process, must peak at about the same. No time is
asserted: memory is not time.

The peak is the child's own VmHWM (/proc/self/status), not os.wait4's ru_maxrss: Linux carries a process's peak
RSS over fork and exec into its child's, so a test worker grown by an earlier test (or by generating the files)
would hide the child's peak behind its own.

The assembly's memory is bounded by its batch sizes (staging's CSV blocks, the assembly's buckets and flushes), not
by the rows; at the real sizes 200k rows are four buckets, so the pipeline of buckets is not yet full and the peak
still rises towards its bound. The child processes run with the sizes divided by ten, so that both files are many
batches (34 and 100 buckets, as 2M and 6M rows are at the real sizes) and all that can grow is what holds the rows.

Measured (docs/performance.md), at these sizes: this code 320-336 MB and 345-350 MB (+12 to +30, four runs; the peak
is the loop over buckets, whose lookups of distinct values hold 6,850 workloads at 200k rows and 15,361 at 600k); the
code of 2828eff 375-393 and 386-395 (-8 to +12: its checks, reading Arrow's batches, peaked above that loop); the code
of 7443d3b, whose bucket files' open Parquet writers held every row group's metadata (a row group per bucket per
flush: the square of the rows), 462 and 536 MB, 449 and 528 MB (+74, +79); the code of 0d553ca, whose blocking checks
read runs, measurements and run_snapshots whole, grew by 742 and 828 MB at the sizes of then. GROWTH_LIMIT_MB sits
between: above this code's growth, two thirds of 7443d3b's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.core import settings

SIZES = (200_000, 600_000)
GROWTH_LIMIT_MB = 50
# The child: the bench's normalize phase with the batch sizes a tenth of the real ones.
NORMALIZE = """
import json, sys
from pipelines.assemble import external_sort
from pipelines.ingest.parse import fast as parse_fast
external_sort.BUCKET_ROWS, external_sort.FLUSH_ROWS, parse_fast.BATCH_BYTES = 6_000, 20_000, 2_000_000
from bench.phases import _phase_normalize
done = _phase_normalize(sys.argv[1], sys.argv[2])
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({**done, "peak_rss_mb": peak / 1024}, default=str))
"""
pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak RSS from /proc (Linux)")


@pytest.fixture(scope="module")
def csv_files(tmp_path_factory) -> dict[int, Path]:
    """The synthetic files, each generated in a process of its own: generating 600k rows peaks at about 2 GB, which
    this worker would otherwise keep while the other tests run beside it."""
    folder = tmp_path_factory.mktemp("synthetic")
    files = {}
    for rows in SIZES:
        command = [sys.executable, "-m", "bench", "--phase", "generate", str(folder), str(rows), "0"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=settings.PROJECT_ROOT, timeout=600, check=True)
        files[rows] = Path(json.loads(done.stdout.strip().splitlines()[-1])["csv"])
    return files


def test_normalization_peak_rss_does_not_grow_with_the_rows(tmp_path, csv_files):
    peaks = {}
    for rows, csv in csv_files.items():
        command = [sys.executable, "-c", NORMALIZE, str(csv), str(tmp_path / str(rows) / "warehouse")]
        # From the checkout: the child imports bench and pipelines from it.
        done = subprocess.run(command, capture_output=True, text=True, cwd=settings.PROJECT_ROOT, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        measured = json.loads(done.stdout.strip().splitlines()[-1])
        # It normalized the whole file: every row is a row of a run or held in quarantine.
        assert measured["row_counts"]["run_snapshots"] + measured["row_counts"]["quarantine"] == rows
        peaks[rows] = measured["peak_rss_mb"]
    small, large = peaks[SIZES[0]], peaks[SIZES[1]]
    print(f"normalization peak RSS: {small:.0f} MB at {SIZES[0]:,} rows, {large:.0f} MB at {SIZES[1]:,}")
    assert large - small < GROWTH_LIMIT_MB, (
        f"normalization's peak RSS grew with the rows: {small:.0f} MB at {SIZES[0]:,} rows, {large:.0f} MB at {SIZES[1]:,} "
        f"(+{large - small:.0f} MB, at most {GROWTH_LIMIT_MB} allowed): something holds what it should stream"
    )
