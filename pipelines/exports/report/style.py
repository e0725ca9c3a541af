"""What the report's pictures share: the providers' colors, the ink of axes and grids, the type sizes."""

from __future__ import annotations

# matplotlib's tab10, then tab20's light half: distinct colors for the first ten providers.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#c7c7c7",
    "#dbdb8d",
    "#9edae5",
)
GRID = "#dddddd"
INK = "#333333"
MUTED = "#666666"
BASELINE = "#555555"
TICK_SIZE = 9
LABEL_SIZE = 10
