"""A share of a count with its 95% Wilson interval: "80% of 5" is not "80% of 500"."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Z95", "Share", "wilson"]

Z95 = 1.959963984540054  # the normal quantile of 0.975: a two-sided 95% interval


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson interval of ``k`` in ``n`` (0–1); :exc:`ValueError` unless 0 ≤ k ≤ n > 0."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"no share of {k} in {n}")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if k == 0 else max(0.0, centre - half)  # exact at the ends, not 1 - 1e-16
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class Share:
    """``k`` of ``n``, with the 95% Wilson interval (``n`` of 0: no share)."""

    k: int
    n: int

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.k, self.n) if self.n else None

    @property
    def half_width(self) -> float:
        """Half the interval's width; 1.0 with no items."""
        low, high = self.interval or (0.0, 1.0)
        return (high - low) / 2

    def __str__(self) -> str:
        """``56% (34 of 61; 95% CI 43–67%)``, or ``– (0 items)``."""
        if not self.n:
            return "– (0 items)"
        low, high = wilson(self.k, self.n)
        return f"{self.k / self.n:.0%} ({self.k} of {self.n}; 95% CI {low * 100:.0f}–{high:.0%})"
