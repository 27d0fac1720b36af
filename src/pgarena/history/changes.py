"""Change points of a series with Apache Otava (issue 24).

Otava (formerly Hunter; MongoDB's and Nyrkiö's change-point detection: E-divisive means of Matteson and James,
"A Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data", JASA 109(505), 2014, with
Otava's Student-t significance test of each split, Fleming et al., "Hunter: Using Change Point Detection to
Hunt for Performance Regressions", ICPE 2023) finds where a series of run medians steps. For each change
point pgarena adds

- the **step**: the geometric mean of the points after it over those before it (each side up to the
  neighbouring change point), and its 95 % Welch interval on the log scale;
- the **versions** between which it happened (the last point before and the first after);
- whether the **environment** stepped there too: the same runs' database ceiling or generator headroom has a
  change point of its own within one point of it. Such a step is labelled a change of the environment, not of
  the stack.

Otava is imported only here (`pip install --no-deps apache-otava==0.8.0`: its analysis needs numpy and scipy,
which pgarena has; its other requirements serve its own CLI's data sources). Without it, `OtavaMissing`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pgarena.history.points import Point
from pgarena.stats.intervals import t_critical

DEFAULT_MAX_PVALUE = 0.001
"""Otava's significance threshold for a split (its own default)."""
DEFAULT_MIN_STEP = 0.02
"""Steps smaller than 2 % of the mean are not reported (Otava's min_magnitude)."""
DEFAULT_WINDOW = 50
"""Otava's window length, in points (its default)."""
MIN_POINTS = 6
"""Fewer points than this: no change point is looked for."""


class OtavaMissing(Exception):
    """Apache Otava cannot be imported; the message says how to install it."""


@dataclass(frozen=True)
class ChangePoint:
    """A step in a series between two consecutive points."""

    index: int
    """The first point after the step (0-based in the series)."""
    before_version: str
    after_version: str
    before_run: str
    after_run: str
    step: float
    """Geometric mean after / before (0.90: 10 % slower)."""
    low: float
    high: float
    """95 % Welch interval of the step."""
    pvalue: float
    """Otava's p-value of the split."""
    environment: bool
    """The database ceiling or the generator headroom stepped at the same place: not the stack's change."""

    def text(self) -> str:
        """'−9.8 % (−11.2 to −8.3 %) between 1.2 and 1.3' plus '(environment)' where it applies."""
        pct = lambda x: f"{100 * (x - 1):+.1f} %"  # noqa: E731
        where = f"between {self.before_version} and {self.after_version}"
        return (f"{pct(self.step)} ({pct(self.low)} to {pct(self.high)}) {where}"
                + (" — a change of the environment (database ceiling or generator headroom), not of the stack"
                   if self.environment else ""))


def _detect(values: Sequence[float], max_pvalue: float, min_step: float) -> list[tuple[int, float]]:
    """(index, p-value) of Otava's change points of `values`."""
    try:
        from otava.analysis import compute_change_points
    except ImportError as exc:
        raise OtavaMissing(f"Apache Otava is not installed ({exc}): pip install --no-deps apache-otava==0.8.0") from None
    if len(values) < MIN_POINTS:
        return []
    found, _ = compute_change_points(list(values), window_len=DEFAULT_WINDOW, max_pvalue=max_pvalue,
                                     min_magnitude=min_step)
    return [(int(c.index), float(c.stats.pvalue)) for c in found]


def _welch(before: Sequence[float], after: Sequence[float]) -> tuple[float, float, float]:
    """Geometric-mean ratio after/before with its 95 % Welch interval (log scale)."""
    a, b = [math.log(v) for v in before], [math.log(v) for v in after]
    centre = statistics.fmean(b) - statistics.fmean(a)
    va = statistics.variance(a) / len(a) if len(a) > 1 else 0.0
    vb = statistics.variance(b) / len(b) if len(b) > 1 else 0.0
    se = math.sqrt(va + vb)
    if se == 0:
        return math.exp(centre), math.exp(centre), math.exp(centre)
    df = (va + vb) ** 2 / ((va**2 / (len(a) - 1) if len(a) > 1 else 0) + (vb**2 / (len(b) - 1) if len(b) > 1 else 0))
    h = t_critical(0.95, max(1, int(df))) * se
    return math.exp(centre), math.exp(centre - h), math.exp(centre + h)


def _environment_steps(points: Sequence[Point], max_pvalue: float, min_step: float) -> set[int]:
    """Indexes where the runs' database ceiling or generator headroom stepped (where every point has it)."""
    steps: set[int] = set()
    for figure in ("db_ceiling_tps", "headroom_rps"):
        values = [getattr(p, figure) for p in points]
        if all(v is not None and v > 0 for v in values):
            steps |= {i for i, _ in _detect(values, max_pvalue, min_step)}
    return steps


def change_points(points: Sequence[Point], max_pvalue: float = DEFAULT_MAX_PVALUE,
                  min_step: float = DEFAULT_MIN_STEP) -> list[ChangePoint]:
    """The change points of one series (its points in run order), each with its step, interval, versions and
    whether the environment stepped there too (module docstring)."""
    values = [p.rps_median for p in points]
    found = _detect(values, max_pvalue, min_step)
    environment = _environment_steps(points, max_pvalue, min_step) if found else set()
    bounds = [0, *(i for i, _ in found), len(values)]
    out = []
    for k, (index, pvalue) in enumerate(found, start=1):
        step, low, high = _welch(values[bounds[k - 1]:index], values[index:bounds[k + 1]])
        out.append(ChangePoint(
            index=index, before_version=points[index - 1].version, after_version=points[index].version,
            before_run=points[index - 1].run_id, after_run=points[index].run_id, step=step, low=low, high=high,
            pvalue=pvalue, environment=any(abs(index - e) <= 1 for e in environment)))
    return out
