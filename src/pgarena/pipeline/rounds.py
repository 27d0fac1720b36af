"""How many rounds an interleaved phase may take and the rule that stops them (`load.scheduler.RoundsPolicy`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from pgarena.analysis.abgate import GATE_MIN_BLOCKS, GATE_MIN_ROUNDS, GateRule
from pgarena.analysis.ranking import flagged_out
from pgarena.config.run import RunConfig
from pgarena.load.scheduler import RoundsPolicy, recent_mean
from pgarena.load.warmup import WINDOW_S
from pgarena.pipeline.warming import folds_into_lead_in


def max_rounds(config: RunConfig) -> int:
    """The cap of rounds: the profile's maximum repetitions, or fewer if the cell budget allows fewer windows."""
    by_budget = int(config.cell_budget_s // config.duration_s)
    return max(config.repetitions, min(config.max_repetitions, by_budget))


def rounds_policy(config: RunConfig, least: int, deadline: float | None, tables: int,
                  last: bool = False) -> RoundsPolicy:
    """The policy of one phase: at least `least` rounds, the profile's cap, the phase's `deadline`. An A/B
    (`config.regression_margin`) decides its pair against the regression floor, each of its `tables` at the
    bounds the gate uses (analysis/abgate.py: its regression claim split over the `tables`) and from the round
    the gate decides at, so that a cell the rounds settled is one the gate can decide. With `config.restart_every` the
    stacks are restarted every that many rounds and the cells judged over those blocks (analysis/executions.py).
    The `last` phase of a run races its open pairs until the deadline or the cap (RoundsPolicy.forecast)."""
    gate, level, block = None, config.confidence_level, config.restart_every
    if config.regression_margin is not None and config.baseline is not None:
        head = next(s for s in config.stacks or [] if s != config.baseline)
        gate = GateRule(head=head, base=config.baseline, floor=1 - config.regression_margin, block_rounds=block,
                        level=level, tables=tables)
        least = max(least, GATE_MIN_ROUNDS, GATE_MIN_BLOCKS * (block or 0))
    return RoundsPolicy(min_rounds=max(2, least), max_rounds=max(2, least, max_rounds(config)),
                        target_rel_half_width=config.target_rel_half_width, level=level,
                        margin=config.equivalence_margin, deadline=deadline, gate=gate, block_rounds=block,
                        every_pair=config.resolve_every_pair, forecast=not last)


BUDGET_RESERVE_S = 60.0
"""Of a run's budget, kept for what follows the last round: cells' closing checks, ceilings, reports."""
FORECAST_MARGIN = 1.05
"""What the phases after the headline are forecast to need is taken this much larger: a phase left short of its least
rounds has no paired verdict at all. What the forecast knows to differ from the headline's windows it counts
(`LATER_OVERHEAD_RATIO`, `WARMUP_WINDOW_OVERHEAD_S`); the margin is for the machine's speed, which moves pgarena's
own work (a fifth of the later tables' time) and not the windows and re-warms of fixed length. It was 1.15 until
2026-11-29, when the forecast took the later windows' overhead as the headline's and a warm-up's as one window's: in
bench25 the later tables' least rounds and warm-ups took 1,077 s, the forecast without the margin about 1,060, and the
margin's 160 s went to a partial third round of theirs (79 windows) where the headline's open pairs needed them. With
both counted the forecast of bench25's later tables is 1,092 s (1.4 % over)."""
PHASE_START_S = 15.0
"""Each phase's start: the database levelled (VACUUM, CHECKPOINT)."""
HEADLINE_CLOSE_S = 10.0
"""The headline's closing, which its moving deadline leaves out (`moving_deadline`): its cells' closing checks, its
report and a save (write_reports alone took 0.85 s on bench17's whole results). Without it the headline stopped with
exactly the later tables' forecast left, less under a round, and its closing could take what the last of them needed:
the later phase then left it out (`tables_that_fit`, which forecasts the same need afresh)."""
WARMUP_OVERHEAD_S = 0.3
"""A warm-up's time beyond its own seconds (the generator's start, its checks): 142 warm-ups of 1.0–1.2 s took 180 s
in bench17's closed phase (2026-11-28 22:10:34–22:13:35, from its raw files' times), 1.27 s apiece; 0.5 before
(bench3: 180 warm-ups of 1.06 s in ~265 s, when every poll of a stack's connections read the kernel's socket table)."""
WARMUP_WINDOW_OVERHEAD_S = 0.1
"""And for each of its one-second windows (`load.warmup.WINDOW_S`): a longer warm-up is a window at a time, in turns
with the other stacks'. bench25's closed phase (2026-11-29): the JVMs' 19 declared warm-ups, 11 of 10 s and 8 of 15 s
(230 windows), ended 251 s after the phase's 15 s, 21 s beyond their seconds (`warmup_overhead_s`: 28.7 s)."""
LATER_OVERHEAD_RATIO = 1.5
"""pgarena's own work per window in the tables after the headline, as a multiple of the headline's: their tx windows
check the TPC-B invariants (0.36 s a window beyond its re-warm and window, from the raw files' times, against
perf-test's 0.20), static answers some 35,000 requests a second (0.37 s), and each stack's cells of a round switch
workloads. bench24 and bench25 (2026-11-29): 0.29 and 0.28 s a window beyond their windows, re-warms, idle re-warms and
lead-ins (0.31 and 0.30 with the lead-ins an idle re-warm covered), against their headlines' 0.198 and 0.195."""


def warmup_overhead_s(seconds: float) -> float:
    """A warm-up of `seconds`' time beyond them: `WARMUP_OVERHEAD_S`, and `WARMUP_WINDOW_OVERHEAD_S` a window."""
    return WARMUP_OVERHEAD_S + WARMUP_WINDOW_OVERHEAD_S * math.ceil(seconds / WINDOW_S - 1e-9)


@dataclass(frozen=True)
class PhaseNeed:
    """The least a phase still to come takes: `rounds` rounds of `windows` windows, each a re-warm and a window
    of `window_s` together, and `idle_rewarm_s` of longer re-warms a round (contract/idle.py: each stack's first window
    of a round, after the others' windows: every stack's the rule applies to, in full), after `warmup_s` of warm-ups
    (overhead included)."""

    windows: int
    rounds: int
    window_s: float
    warmup_s: float
    idle_rewarm_s: float = 0.0

    def seconds(self, overhead_s: float) -> float:
        """At `overhead_s` of pgarena's work per window of its own beyond its re-warm and window."""
        return (PHASE_START_S + self.warmup_s
                + self.rounds * (self.windows * (self.window_s + overhead_s) + self.idle_rewarm_s))


def later_need_s(needs: Sequence[PhaseNeed], slot_s: float, own_window_s: float) -> float:
    """What the phases after the headline need at the least (with the margin), forecast from the headline's measured
    slot: its per-window overhead is the slot less its re-warm and window (its idle gaps' longer re-warms included, as a
    mean per window), and theirs `LATER_OVERHEAD_RATIO` times that."""
    overhead = LATER_OVERHEAD_RATIO * max(0.0, slot_s - own_window_s)
    return FORECAST_MARGIN * sum(need.seconds(overhead) for need in needs)


def moving_deadline(start: float, least_windows: int, end: float, needs: Sequence[PhaseNeed],
                    own_window_s: float, idle_rewarm_of: Callable[[], float] = lambda: 0.0) -> Callable[[float], float]:
    """The headline's deadline as its rounds measure their slot (RoundsPolicy.deadline_of): all the time up to
    `end` that the phases after it do not need (`later_need_s`) less its own closing before they start
    (`HEADLINE_CLOSE_S`), and never less than its own least rounds from `start` (`least_windows` windows at the slot,
    with the margin). The later tables' least rounds come before the headline's rounds beyond its own: a complete
    answer first. (Before 2026-11-28 the headline kept at least its `headline_share` of the time left: in bench15 that
    share, 40 % of 25 minutes after 13 minutes of builds, held its last 2 minutes, rounds 16–26, which resolved 1 more
    of its 18 pairs, while a later table was left out for want of about 2 minutes.)
    The time a later phase cannot use (a table that does not fit, a round more that does not) is not lost: the last
    phase races its open pairs until the deadline. `idle_rewarm_of()`: the longer re-warms (contract/idle.py) of the
    windows the slot is measured over (`scheduler.recent_mean`), a mean per window: part of the slot, not of pgarena's
    overhead. (Taken over all the phase's windows, when the slot was of its last 50, it counted the first rounds'
    longer re-warms against narrowed rounds that had few: the overhead came out nil, and the headline ran on into the
    time of a later table, which was then left out — bench20, 2026-11-29.)"""
    close = HEADLINE_CLOSE_S if needs else 0.0
    return lambda slot_s: max(start + FORECAST_MARGIN * least_windows * slot_s,
                              end - close - later_need_s(needs, slot_s, own_window_s + idle_rewarm_of()))


def phase_need(run: Any, phase: Any, tables: Collection[Hashable] | None = None) -> PhaseNeed:
    """The least `phase` (an interleaved._Phase of `run`, an InterleavedRun, not started yet; typed Any, as
    interleaved.py imports this module) takes: its cells that can be measured (of `tables` only, cell keys less
    the stack, when given), its least rounds, its windows, and a warm-up at its cap (or the stack's declared
    least, when more: `RunSpec.least_warmup_s`) for every stack and workload not warmed yet: a one-window warm-up of a
    table after the headline as the lead-in of its first window (`warming.folds_into_lead_in`), only its excess over
    the re-warm."""
    config, later = run.ctx.config, run._later(phase)
    cap = max(later.warmup_cap_s, config.warmup_s) if later is not None else config.warmup_cap_s
    cells = [(run.lives[key[0]], cell) for key, cell in phase.cells.items()
             if cell.status != "failed" and (tables is None or key[1:] in tables)]
    warm: dict[tuple, float] = {}
    for live, cell in cells:  # a stack's declared least warm-up counts once, before its first cell after the start
        key = (live.id, cell.workload, cell.db_rtt_ms)
        if (cell.workload, cell.db_rtt_ms) in live.warmed or cell.repetitions or key in warm:
            continue
        first = not live.warmed and not any(other[0] == live.id for other in warm)
        warm[key] = max(cap, live.stack.definition.run.least_warmup_s(config.warmup_s, first))
    stacks = len({live.id for live, _ in cells if live.stack.definition.run.idle_rewarm})  # the rule's stacks
    rewarm = run.rewarm_seconds(phase)
    # a one-window warm-up is the first window's lead-in (pipeline/warming.py): only its excess over the re-warm
    warmup = sum(max(0.0, seconds - rewarm) if folds_into_lead_in(later, seconds)
                 else seconds + warmup_overhead_s(seconds) for seconds in warm.values())
    return PhaseNeed(windows=len(cells), rounds=max(2, later.repetitions if later is not None else config.repetitions),
                     window_s=window_and_rewarm_s(run, phase), warmup_s=warmup,
                     idle_rewarm_s=stacks * config.idle_rewarm_s)


def measured_overhead_s(run: Any) -> float | None:
    """pgarena's own work per window of a table after the headline beyond its re-warm and window (checks,
    bookkeeping), from the latest phase of `run` that measured its slot: a later phase's own, or the headline's times
    `LATER_OVERHEAD_RATIO` (None: no phase has measured one yet)."""
    for record in reversed(run.record.phases):
        if record.slot_seconds is not None and record.window_seconds is not None:
            idle = record.idle_rewarm_seconds / record.windows if record.windows else 0.0
            own = max(0.0, record.slot_seconds - record.window_seconds - (record.rewarm_seconds or 0.0) - idle)
            return own * (LATER_OVERHEAD_RATIO if record.name.startswith("headline") else 1.0)
    return None


def tables_that_fit(run: Any, phase: Any, deadline: float, now: float) -> list[Hashable] | None:
    """The tables (cell keys less the stack) of `phase`, in plan order, whose least rounds and warm-ups fit before
    `deadline` (with `FORECAST_MARGIN`), at the per-window overhead an earlier phase measured; taken first come,
    first served, so a table that does not fit leaves its room to a smaller one after it. None: no slot measured
    yet, nothing to forecast from (every table is taken). The scheduler checks its deadline only after a round
    (it has no slot before one): without this, a phase that starts when the budget is spent takes a whole round
    (bench11, 2026-11-28: the later tables' first round, 370 windows, begun at minute 40 of a 40-minute budget)."""
    overhead = measured_overhead_s(run)
    if overhead is None:
        return None
    chosen: list[Hashable] = []
    for table in dict.fromkeys(key[1:] for key in phase.cells):
        need = FORECAST_MARGIN * phase_need(run, phase, [*chosen, table]).seconds(overhead)
        if now + need <= deadline:
            chosen.append(table)
    return chosen


def phase_deadline(run: Any, phase: Any) -> float | None:
    """When `phase`'s rounds must stop, from `run`'s deadline: the time left (less `BUDGET_RESERVE_S` for the cells'
    closing checks and the reports) shared among this and the phases still to come by their cells as planned, the
    headline getting at least the configured `headline_share` of it (None: no budget)."""
    deadline = run.ctx.deadline
    if deadline is None:
        return None
    left = max(0.0, deadline - time.monotonic() - BUDGET_RESERVE_S)
    todo = [p for p in run.phases if p.name not in run.finished_phases]
    weight = {p.name: p.planned or len(p.cells) for p in todo}  # tables left out keep their share
    total = sum(weight.values()) or 1
    share = weight.get(phase.name, total) / total
    if phase.name.startswith("headline"):
        share = max(share, run.ctx.config.headline_share)
    return time.monotonic() + left * share


def drop_what_cannot_fit(run: Any, phase: Any, record: Any, static: float | None) -> bool:
    """Leave out of a phase after the headline the tables whose least rounds no longer fit before `static` (its
    share of the budget: `tables_that_fit`), named in `record.not_measured` (a PhaseRecord; anew on a resume, whose
    budget is its own); a table with windows from before a resume stays. False: nothing is left to measure."""
    record.not_measured = []
    if static is None or phase.name.startswith("headline"):  # the headline is the first answer: always taken
        return True
    from pgarena.pipeline.cells import cell_title

    fits = tables_that_fit(run, phase, static, time.monotonic())
    begun = {key[1:] for key, cell in phase.cells.items() if cell.repetitions}
    dropped = [key for key in phase.cells if fits is not None and key[1:] not in fits and key[1:] not in begun]
    titles = list(dict.fromkeys(cell_title(phase.cells[key]) for key in dropped))
    if titles:
        record.not_measured = titles
        run.ctx.log(f"{phase.name} phase: {len(titles)} table(s) not measured, their least rounds no longer "
                    f"fit the budget: {', '.join(titles)}")
    for key in dropped:
        del phase.cells[key]
    return bool(phase.cells)


def window_and_rewarm_s(run: Any, phase: Any) -> float:
    """A window of `phase` with the re-warm before it, in seconds of load."""
    return next(iter(phase.cells.values())).duration_seconds + run.rewarm_seconds(phase)


def batch_is_last(run: Any) -> bool:
    """Nothing follows `run`'s batch of phases: no SLO search and no further pool size (`run.pool` the last)."""
    config = run.ctx.config
    return config.slo_p99_ms is None and run.pool == (list(config.pool_sizes) or [None])[-1]


def headline_deadline_of(run: Any, phase: Any, static: float | None, last: bool,
                         least: int = 2) -> Callable[[float], float] | None:
    """The headline's moving deadline (`moving_deadline`, up to the run's deadline less `BUDGET_RESERVE_S`, its
    `least` rounds from now on at the least) when the phases of its batch are all that follow it; None otherwise (no
    budget, not the headline, the last phase, or SLO searches or another pool size to come, which are not
    forecast): the `static` deadline applies."""
    deadline = run.ctx.deadline
    if (static is None or deadline is None or last or not phase.name.startswith("headline")
            or not batch_is_last(run)):
        return None
    needs = [phase_need(run, p) for p in run.phases if p is not phase and p.name not in run.finished_phases]
    return moving_deadline(time.monotonic(), least * phase_need(run, phase).windows, deadline - BUDGET_RESERVE_S,
                           needs, window_and_rewarm_s(run, phase), lambda: recent_mean(run.idle_extras) or 0.0)


def unranked_of(phase: Any) -> Callable[[Hashable], set[str]]:
    """For the race (`run_rounds`' `unranked`): the stacks of a cell of `phase` whose cell a flag keeps out of the
    ranking at this point (`ranking.flagged_out`; summarize() sets the flags after every window)."""
    def unranked(cell_key: Hashable) -> set[str]:
        return {key[0] for key, cell in phase.cells.items() if key[1:] == cell_key and flagged_out(cell)}
    return unranked
