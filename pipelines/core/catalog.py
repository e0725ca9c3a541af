"""The kernel and GPU catalogs: CSV files under pipelines/catalog/ that a person extends."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CATALOG_DIR = Path(__file__).resolve().parent.parent / "catalog"
KNOWN_VENDORS = ("nvidia", "amd", "intel", "apple", "google", "huawei")


@dataclass(frozen=True)
class Gpu:
    gpu_name: str
    vendor: str
    product: str
    form_factor: str | None
    architecture: str | None
    known: bool


def _read(name: str) -> list[dict[str, str]]:
    with open(CATALOG_DIR / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@cache
def kernel_titles() -> dict[str, str]:
    return {row["kernel"]: row["title"] for row in _read("kernels.csv")}


@cache
def gpu_catalog() -> dict[str, Gpu]:
    return {
        row["gpu_name"]: Gpu(row["gpu_name"], row["vendor"], row["product"], row["form_factor"], row["architecture"], True)
        for row in _read("gpus.csv")
    }


def kernel_title(kernel: str) -> str:
    """The catalog title, or a readable fallback (`fused_foo_bar` -> `Fused foo bar`)."""
    known = kernel_titles().get(kernel)
    if known:
        return known
    words = kernel.replace("_", " ").replace("-", " ").split()
    return " ".join(words).capitalize() if words else kernel


def is_known_kernel(kernel: str) -> bool:
    return kernel in kernel_titles()


def gpu(gpu_name: str) -> Gpu:
    """The catalog entry, or vendor and product only for a GPU the catalog lacks."""
    known = gpu_catalog().get(gpu_name)
    if known:
        return known
    first_word = gpu_name.split(" ", 1)[0].lower()
    vendor = first_word if first_word in KNOWN_VENDORS else "unknown"
    return Gpu(gpu_name, vendor, gpu_name, None, None, False)


def gpu_short_name(gpu_name: str) -> str:
    """`NVIDIA A100-SXM4-80GB` -> `A100-SXM4-80GB`: the name without its vendor word."""
    first, _, rest = gpu_name.partition(" ")
    return rest if rest and first.lower() in KNOWN_VENDORS else gpu_name
