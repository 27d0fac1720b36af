"""Statistics over repetitions. Percentiles within a window come from the generators themselves.

The median is the robust centre of a few repetitions (hyperfine and pyperf report it for the same
reason: one noisy repetition does not move it); the range (min..max) is reported beside it, and the
relative spread `(max - min) / median` is what the report flags when it is too wide to rank.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pgarena.results import Spread

DEFAULT_NOISY_REL_SPREAD = 0.2
"""A cell whose RPS range exceeds 20 % of its median is flagged 'noisy' (this machine drifts ±10–20 %)."""


def spread(values: Sequence[float]) -> Spread:
    """Median, min, max and relative spread of one figure over the repetitions."""
    if not values:
        raise ValueError("spread of no values")
    median = statistics.median(values)
    low, high = min(values), max(values)
    return Spread(median=median, min=low, max=high, rel_spread=(high - low) / median if median else 0.0)


def ranges_overlap(a: Spread, b: Spread) -> bool:
    """True when two cells' ranges overlap: their order is not established by these repetitions."""
    return a.min <= b.max and b.min <= a.max
