"""The A/A check of `pgarena calibrate`: copies of one stack measured as if they were different stacks.

The copies are identical, so every order the verdict claims among them is a false claim: the check fails if
there is one. Beside that it reads what the run says about this machine: its noise budget (noise.py), every
copy-vs-copy interval (how wide "not resolved" is here; the check is *sharp* when every one lies within the
equivalence margin, issue 21's 0.90–1.11), and the smallest difference the verdict would resolve in a given
number of rounds (`sequential.detectable_ratio`) and how long those rounds take. Its run resolves every pair of
copies, not only neighbouring ones (`RunConfig.resolve_every_pair`), since its question is about every pair.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from pgarena.analysis.noise import NoiseBudget, noise_budget, pooled_budget, table_label, table_rounds
from pgarena.analysis.paired import paired_ratio
from pgarena.analysis.ranking import BY_RPS, comparable_groups, in_field, out_of_field, rank_basis
from pgarena.analysis.verdicts import TableVerdict, run_verdicts, verdict_settings, window_seconds
from pgarena.results.models import RunResults
from pgarena.stats.intervals import DEFAULT_EQUIVALENCE_MARGIN

RESOLUTION_ROUNDS = (5, 10, 20, 40)
"""Round counts at which the report states the smallest resolvable difference."""
HEADLINE_STACKS = 20
"""The default suite's headline table size, at which the resolution is stated beside the A/A table's own."""


@dataclass(frozen=True)
class PairReading:
    """Copy a over copy b in one table: the paired ratio and its interval, whether an order was claimed and
    whether the interval lies within the equivalence margin."""

    a: str
    b: str
    ratio: float
    low: float
    high: float
    rounds: int
    claimed: bool
    within: bool


@dataclass
class TableCheck:
    """One table of the A/A run."""

    label: str
    budget: NoiseBudget
    pairs: list[PairReading] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    """Copies the verdict does not rank in this table, with why ('go-nethttp-pgx-aa1 (generator-bound)'): their
    figure is not the stack's, so no pair of theirs is read."""

    @property
    def claims(self) -> list[PairReading]:
        """The pairs whose interval excludes 1: an order claimed among identical copies (a false claim)."""
        return [p for p in self.pairs if p.claimed]


@dataclass(frozen=True)
class Resolution:
    """The smallest ratio > 1 the verdict resolves with `rounds` rounds in a table of `stacks` stacks, and the
    seconds those rounds take there (AACheck.seconds_per_window a window)."""

    stacks: int
    rounds: int
    ratio: float
    seconds: float


@dataclass
class AACheck:
    """The whole A/A check (module docstring)."""

    copies: list[str]
    tables: list[TableCheck]
    pooled: NoiseBudget | None
    window_log_sd: float | None
    """The per-window log-sd the resolution is computed with: after the probe where it was read."""
    seconds_per_window: float
    """The wall time of one window, in seconds: measured (`slot_measured`), else its window plus its re-warm."""
    resolution: list[Resolution] = field(default_factory=list)
    margin: float = DEFAULT_EQUIVALENCE_MARGIN
    """The run's equivalence margin: the check is sharp when every interval lies within [1/(1+m), 1+m]."""
    slot_measured: bool = False
    """`seconds_per_window` is the run's measured wall time per window, not the configured window + re-warm."""

    @property
    def passed(self) -> bool:
        """No order was claimed among the copies in any table."""
        return not any(t.claims for t in self.tables)

    @property
    def wide(self) -> list[tuple[str, PairReading]]:
        """(table, pair) of every copy-vs-copy interval reaching beyond the margin: how far from sharp."""
        return [(t.label, p) for t in self.tables for p in t.pairs if not p.within]

    @property
    def sharp(self) -> bool:
        """Every table read some pair, and every copy-vs-copy interval lies within the margin."""
        return bool(self.tables) and all(t.pairs for t in self.tables) and not self.wide


def _pair(verdict: TableVerdict, rps: dict[str, list[float | None]], a: str, b: str,
          margin: float) -> PairReading | None:
    """a / b as the verdict states it: its own simultaneous interval where it has one, else the paired
    interval of the two (paired.paired_ratio) for a table the verdict did not judge as a whole (a mixed one)."""
    inference = verdict.inference
    found = inference.interval(a, b) if inference is not None else paired_ratio(rps[a], rps[b])
    if found is None:
        return None
    return PairReading(a, b, found.ratio, found.low, found.high, found.rounds,
                       claimed=found.relation in ("above", "below"), within=found.within(margin))


def aa_check(results: RunResults, copies: Sequence[str], *, seconds_per_window: float | None = None) -> AACheck:
    """The A/A check of a run whose stacks `copies` are copies of one stack (module docstring).
    `seconds_per_window`: a window plus its re-warm (default: from the run's configuration)."""
    verdicts = run_verdicts(results)
    margin = verdict_settings(results)[1]
    tables: list[TableCheck] = []
    measured: list[tuple] = []
    for key, cells in comparable_groups(c for c in results.cells if c.stack in copies).items():
        if rank_basis(cells) != BY_RPS:
            continue
        rps, unit = table_rounds(cells)
        if not rps:
            continue
        measured.append((rps, unit))
        ranked = {c.stack for c in cells if in_field(c)}
        check = TableCheck(label=table_label(cells[0]), budget=noise_budget(rps, unit),
                           left_out=[f"{c.stack} ({out_of_field(c)})"
                                     for c in sorted(cells, key=lambda c: c.stack) if c.stack not in ranked])
        verdict = verdicts.get(key)
        if verdict is not None:
            for a, b in itertools.combinations(sorted(s for s in rps if s in ranked), 2):
                pair = _pair(verdict, rps, a, b, margin)
                if pair is not None:
                    check.pairs.append(pair)
        tables.append(check)
    pooled = pooled_budget(measured) if measured else None
    sd = None
    if pooled is not None:
        sd = pooled.adjusted_window_log_sd if pooled.adjusted_window_log_sd is not None else pooled.window_log_sd
    slot_measured = False
    if seconds_per_window is None:
        seconds_per_window, slot_measured = window_seconds(results)
    check = AACheck(copies=list(copies), tables=tables, pooled=pooled, window_log_sd=sd,
                    seconds_per_window=seconds_per_window, margin=margin, slot_measured=slot_measured)
    if sd is not None:
        check.resolution = resolution(sd, seconds_per_window,
                                      stacks=sorted({len(check.copies), HEADLINE_STACKS}))
    return check


def resolution(window_log_sd: float, seconds_per_window: float, *, stacks: Sequence[int],
               rounds: Sequence[int] = RESOLUTION_ROUNDS) -> list[Resolution]:
    """The smallest resolvable ratio for each (stacks, rounds): `sequential.detectable_ratio` with one claim
    per pair of the table's stacks, and the seconds of windows those rounds take (stacks × rounds × window)."""
    # NOTE: imported here, not at the top: detectable_ratio belongs to the verdict's statistics
    # (analysis/sequential.py), which the rewrite of the verdict adds.
    from pgarena.analysis.sequential import detectable_ratio

    return [Resolution(stacks=s, rounds=n, ratio=detectable_ratio(window_log_sd, n, s * (s - 1) // 2),
                       seconds=s * n * seconds_per_window) for s in stacks for n in rounds]
