"""Implementations as the report names and draws them: a provider and the backend its file was written for.

Upstream names variants of one provider by suffix (`liger`, `liger_triton`, `liger_cutile`,
`liger-fp32-accum`), and the same provider on another backend (`liger` in the cuTile file) is
another implementation again (SPEC section 4). The report writes each as `provider · backend`,
and draws a *family* (the provider's name up to its first `_` or `-`) in one hue: each variant a
shade of it with a dash pattern of its own, so they can be told apart and read together, and the
legend lists them under their family.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pipelines.exports.report import svg
from pipelines.exports.report.style import PALETTE

SEPARATOR = " · "
# A variant's shade (mixed toward black, then white) and dash pattern, by its place in its family.
_SHADES = (0.0, -0.4, 0.3, -0.6, 0.45, -0.2, 0.15)
_DASHES = ("", "6 3", "2 2", "8 3 2 3", "1 3", "10 4", "4 2 1 2")


@dataclass(frozen=True)
class Style:
    """How one implementation is drawn: its color, and its line's dash pattern ('' is solid)."""

    color: str
    dash: str = ""

    @property
    def dash_attribute(self) -> str:
        return f' stroke-dasharray="{self.dash}"' if self.dash else ""


def label(provider: str, backend: str | None) -> str:
    """`liger · cutile`; a provider alone when the backend is not known (a statistic that has none yet)."""
    return f"{provider}{SEPARATOR}{backend}" if backend else provider


def family(implementation: str) -> str:
    """The provider family of an implementation's label: `liger_cutile · cutile` -> `liger`."""
    provider = implementation.split(SEPARATOR, 1)[0]
    return re.split(r"[_\-]", provider, maxsplit=1)[0] or provider


def group(implementations: Iterable[str]) -> dict[str, list[str]]:
    """The implementations per family, each family's in the order given, families in order of first appearance."""
    families: dict[str, list[str]] = {}
    for implementation in dict.fromkeys(implementations):
        families.setdefault(family(implementation), []).append(implementation)
    return families


def styles(implementations: Sequence[str]) -> dict[str, Style]:
    """A style per implementation: its family's color (in order of first appearance) shaded per variant."""
    result = {}
    for i, (_, members) in enumerate(group(implementations).items()):
        base = PALETTE[i % len(PALETTE)]
        for j, implementation in enumerate(members):
            shade = _SHADES[j % len(_SHADES)]
            color = svg.mix(("#000000", base, "#ffffff"), 0.5 + shade / 2) if shade else base
            result[implementation] = Style(color, _DASHES[j % len(_DASHES)])
    return result


def colors(styles_: Mapping[str, Style]) -> dict[str, str]:
    return {name: style.color for name, style in styles_.items()}
