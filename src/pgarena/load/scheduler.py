"""Executing an interleaved schedule: a race of rounds, spent where the verdict is still open.

The scheduler knows nothing of stacks, generators or databases: it is handed the (stack, cell) pairs, a
`measure` callback that runs one window and returns its figure (requests/s, or (requests/s, the speed probe's
unit ns); None when the window failed), and the figures of windows already measured (a resumed run). Each
round visits the active (stack, cell) pairs once in the seeded order of `schedule.round_order`. After every
round each cell is judged with the verdict's own inference (`analysis.sequential.judge`: simultaneous,
anytime-valid intervals, so looking after every round costs no error), and the next round is narrowed — a
race in the sense of Maron and Moore's Hoeffding races (NIPS 1993) and Birattari's F-race (GECCO 2002):

- a stack stays in a cell's rounds while a neighbouring pair it belongs to (any pair, with
  `RoundsPolicy.every_pair`) is *not resolved* (neither ordered nor equivalent within the margin) and still
  *within reach*: at its present estimate and noise it would
  resolve within the rounds the cap and the time budget leave (`forecast.rounds_to_resolve`), a round costed at
  the stacks that stay, the pairs nearest to resolution taken first (`_race`);
- an A/B (`RoundsPolicy.gate`) asks one question of its one pair, the gate's: is head/base's interval wholly
  above or below the regression floor? That pair is open until it is; it leaves as out of reach only when the
  cap of rounds could not settle it (`GateRule.rounds_needed`), never on a forecast of the time left: a
  self-A/B's estimate near the floor forecasts hundreds of rounds, and giving up then left most of a budget
  unspent;
- a cell whose pairs are all resolved leaves (`settled`); one whose open pairs are all out of reach leaves
  too (`out-of-reach`), and its report lists them "not resolved" with their intervals; the forecast is of the
  interval a pair raced until the time runs out gets, the verdict's final look (`RoundsOutcome.horizon`: the
  stacks of the cells the time or the cap stopped, measured in every round until then);
- the phase stops when no cell is left, at the cap of rounds (`max-rounds`), or when the next round would
  overrun the deadline (`budget`) — before `min_rounds` too: a cell left with fewer rounds than a verdict
  needs says "not resolved". A round that no longer fits whole is taken by the cells whose own round fits
  (`_cells_that_fit`); the others stop before it.

Before `min_rounds` every stack of every cell is measured in every round. A cell of one stack has no pair:
it stops once its own interval is within `target_rel_half_width`, as a sequential cell does.

The caller stores each window as it comes (`measure` does), so an interruption loses at most the window
in flight, and a resume passes the stored figures back in `known`.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Union

from pgarena.analysis.abgate import GateRule
from pgarena.analysis.executions import judge_table
from pgarena.analysis.forecast import rounds_to_resolve
from pgarena.analysis.paired import PairVerdict
from pgarena.analysis.sequential import (
    DEFAULT_EQUIVALENCE_MARGIN,
    DEFAULT_FAMILY_LEVEL,
    Inference,
    unresolved_pairs,
)
from pgarena.load.schedule import Slot, round_order
from pgarena.stats.intervals import relative_half_width

StopReason = Literal["settled", "out-of-reach", "max-rounds", "budget"]
Figure = Union[float, tuple[float, Union[float, None]], None]
"""What `measure` returns: requests/s, or (requests/s, probe unit ns or None); None: the window failed."""
SLOT_WINDOWS = 50
"""The slot a phase forecasts with is the mean wall time of its last this many windows."""


def recent_mean(values: Sequence[float]) -> float | None:
    """The mean of the last `SLOT_WINDOWS` of `values`, in the order measured (None: none yet)."""
    recent = values[-SLOT_WINDOWS:]
    return sum(recent) / len(recent) if recent else None


@dataclass(frozen=True)
class RoundsPolicy:
    """When an interleaved phase stops. `deadline` is a `clock()` time (None: no time budget)."""

    min_rounds: int
    max_rounds: int
    target_rel_half_width: float = 0.10
    """One-stack cells only: stop when the cell's own interval is within this (relative) half-width."""
    level: float = DEFAULT_FAMILY_LEVEL
    margin: float = DEFAULT_EQUIVALENCE_MARGIN
    deadline: float | None = None
    budget_s: float | None = None
    """A time budget relative to the phase's start (the earlier of this and `deadline` applies)."""
    deadline_of: Callable[[float], float] | None = None
    """A deadline that moves with the time the rounds' windows take: called after every round with the mean
    seconds per window measured so far, it replaces `deadline` (the headline's: what the phases after it need
    is forecast from that slot, pipeline/rounds.py)."""
    once_of: Callable[[], float] | None = None
    """The seconds of the last `SLOT_WINDOWS` windows that later rounds will not have again, as a mean per window (the
    tables after the headline: a cell's first window with its warm-up as the lead-in, pipeline/warming.py): the slot
    the next rounds are forecast at is the measured one less this. Without it the later tables' second round was
    forecast at the first round's slot, 0.45 s a window too long, and did not fit whole (bench26, 2026-11-29: one
    table stopped after its first round, and the time it left went to third rounds of others)."""
    gate: GateRule | None = None
    """An A/B (`pgarena ab`): its pair is settled once head/base clears the regression floor, not when ordered or
    equivalent; a cell without both stacks is judged as usual."""
    block_rounds: int | None = None
    """The stacks are restarted every this many rounds (`on_new_block`) and the cells judged over complete blocks
    (analysis/executions.py); None: one execution, judged over rounds."""
    every_pair: bool = False
    """A cell is open while any pair of its stacks is not resolved, not only a neighbouring one (`pgarena
    calibrate`: its question is about every pair of copies)."""
    forecast: bool = True
    """After the minimum rounds, pairs that the rounds the time left allows cannot resolve (by
    `forecast.rounds_to_resolve`'s forecast) leave the race, so that their time goes to the phases after
    this one. False (the last phase of a run: no phase is left to give the time to): open pairs are raced until
    the deadline or the cap, since a forecast from a few noisy rounds can be wrong either way."""

    def __post_init__(self) -> None:
        if not 2 <= self.min_rounds <= self.max_rounds:
            raise ValueError(f"need 2 <= min_rounds <= max_rounds, got {self.min_rounds}, {self.max_rounds}")


@dataclass
class RoundsOutcome:
    """What the rounds measured and why they stopped."""

    rounds: int
    stop_reason: StopReason
    values: dict[Hashable, dict[str, list[float | None]]] = field(default_factory=dict)
    """cell → stack → figure per round (index 0 = round 1; None = that window failed or was not taken)."""
    references: dict[Hashable, dict[str, list[float | None]]] = field(default_factory=dict)
    """cell → stack → the speed probe's unit ns per round (None: not measured)."""
    cell_stop: dict[Hashable, StopReason] = field(default_factory=dict)
    """Why each cell stopped: settled cells leave the rounds early; the others stop with the phase."""
    cell_rounds: dict[Hashable, int] = field(default_factory=dict)
    """How many rounds each cell took part in."""
    windows: int = 0
    """Windows measured by this call (resumed ones not counted)."""
    seconds_per_window: float | None = None
    """Mean wall time of those windows (each `measure` call: re-warm, window, checks, bookkeeping); None: none."""
    unsettled: list[str] = field(default_factory=list)
    """Sentences for the neighbouring pairs still not resolved when the rounds stopped."""
    horizon: dict[Hashable, list[str]] = field(default_factory=dict)
    """cell → its stacks measured in every round until the time or the cap of rounds ended the cell (not what its
    rounds showed): the verdict's final look is theirs (`sequential.judge`). Cells that stopped on what they
    showed (settled, out of reach) are not here."""


def _per_round(values: Mapping[int, float | None], rounds: int) -> list[float | None]:
    return [values.get(r) for r in range(1, rounds + 1)]


def pair_sentence(inference: Inference, a: str, b: str) -> str:
    """'a is 1.52× b (1.41–1.64)', 'a and b are equivalent within ±10 % (0.97–1.05)' or 'a and b: not
    resolved (0.84–1.31)': the report's sentence of the pair (`paired.PairVerdict.sentence`)."""
    return PairVerdict(a, b, inference.interval(a, b)).sentence()


@dataclass
class _CellState:
    inference: Inference | None = None
    active: set[str] = field(default_factory=set)
    open_pairs: list[tuple[str, str]] = field(default_factory=list)


def _sentences(cell: _CellState, key: Hashable, label: Callable[[Hashable], str]) -> list[str]:
    """The sentences of a cell's pairs still open (none before its first judgement)."""
    if cell.inference is None:
        return []
    return [f"{label(key)}: {pair_sentence(cell.inference, a, b)}" for a, b in cell.open_pairs]


def _cells_that_fit(state: Mapping[Hashable, _CellState], seconds_per_window: float, left_s: float, seed: int,
                    r: int) -> list[Hashable]:
    """When a whole round no longer fits before the deadline: the cells whose round does, taken in a seeded
    random order (a cell's round is whole, all its active stacks, so its pairs stay paired). The time left
    after the last round would otherwise go unused (bench5, 2026-11-27: 3 minutes, while a round of the 11
    later tables took 5.6)."""
    rng = random.Random(f"pgarena-partial:{seed}:{r}")
    order = sorted(state, key=str)
    rng.shuffle(order)
    fitting, used = [], 0.0
    for cell in order:
        cost = seconds_per_window * len(state[cell].active)
        if used + cost <= left_s:
            fitting.append(cell)
            used += cost
    return fitting


def _one_stack_settled(values: Sequence[float | None], policy: RoundsPolicy) -> bool:
    present = [v for v in values if v is not None]
    return len(present) >= 2 and relative_half_width(present, 0.95) <= policy.target_rel_half_width


def run_rounds(pairs: Sequence[tuple[str, Hashable]], *, seed: int, policy: RoundsPolicy,
               measure: Callable[[Slot], Figure],
               known: Mapping[tuple[str, Hashable, int], Figure] | None = None,
               clock: Callable[[], float] = time.monotonic,
               on_round_end: Callable[[int, list[str]], None] | None = None,
               label: Callable[[Hashable], str] = str,
               on_new_block: Callable[[int, list[tuple[str, Hashable]]], None] | None = None,
               unranked: Callable[[Hashable], Collection[str]] | None = None) -> RoundsOutcome:
    """Race interleaved rounds of `pairs` until the policy says stop (see the module docstring).

    `known` maps (stack, cell, round) to a figure measured before (a resumed run): those windows are not
    measured again. `on_round_end(round, unsettled)` is called after each round with the sentences of the
    pairs still open, e.g. to save and report progress. With `policy.block_rounds` = k, `on_new_block(block, pairs)`
    is called before the first round of every block after the first (rounds k+1, 2k+1, …) that has a window to
    take, with the (stack, cell) pairs still racing: the caller restarts those stacks and warms those cells.
    `unranked(cell)` names the stacks of a cell the verdict will not rank (an invalid flag, a demonstration):
    they are measured in the least rounds, like every stack, but neither judged nor raced — the race's family of
    pairs is the verdict's, and no round is spent on a pair no table will state.
    """
    figures: dict[Hashable, dict[str, dict[int, float | None]]] = defaultdict(lambda: defaultdict(dict))
    refs: dict[Hashable, dict[str, dict[int, float | None]]] = defaultdict(lambda: defaultdict(dict))

    def store(stack: str, cell: Hashable, r: int, figure: Figure) -> None:
        rps, ref = figure if isinstance(figure, tuple) else (figure, None)
        figures[cell][stack][r] = rps
        refs[cell][stack][r] = ref

    known = dict(known or {})
    for (stack, cell, r), value in known.items():
        store(stack, cell, r, value)
    cells = list(dict.fromkeys(cell for _, cell in pairs))
    stacks_of = {cell: [s for s, c in pairs if c == cell] for cell in cells}
    for stack, cell in pairs:
        figures[cell][stack]  # noqa: B018 — every pair appears, even before its first window
    state = {cell: _CellState(active=set(stacks_of[cell])) for cell in cells}
    cell_rounds: dict[Hashable, int] = {}
    cell_stop: dict[Hashable, StopReason] = {}
    started = clock()
    budget_end = None if policy.budget_s is None else started + policy.budget_s

    def earliest(d: float | None) -> float | None:
        """The earlier of `d` and the end of the phase's own budget (None: neither)."""
        return min([x for x in (d, budget_end) if x is not None], default=None)

    deadline = earliest(policy.deadline)
    window_seconds: list[float] = []
    windows = 0
    r = 0
    open_sentences: list[str] = []
    parted: list[str] = []
    """The open pairs of cells that left the rounds unresolved (out of reach, or no room in the last round)."""
    skipped: dict[Hashable, set[str]] = defaultdict(set)
    """cell → its stacks left out of a round (their rounds' count was the race's choice: no final look)."""
    timed_out: list[Hashable] = []
    """Cells the time or the cap stopped."""

    def throughout(cell: Hashable) -> list[str]:
        """The cell's stacks measured in every round so far (a pair of two of them can still get the final look)."""
        return [s for s in stacks_of[cell] if s not in skipped[cell]]

    def leave(cell: Hashable, stop: StopReason, room: tuple[int, int]) -> None:
        """The cell leaves the rounds: its open pairs, unless settled, go to the record as they stand."""
        cell_stop[cell] = stop
        if min(room) <= 0:  # no round was left for it, whatever it showed: the time or the cap ended it
            timed_out.append(cell)
        left = state.pop(cell)
        if stop != "settled":
            parted.extend(_sentences(left, cell, label))
    while True:
        r += 1
        in_round = [(stack, cell) for stack, cell in pairs if cell in state and stack in state[cell].active]
        for cell, cell_state in state.items():
            skipped[cell] |= set(stacks_of[cell]) - cell_state.active
        k = policy.block_rounds
        if (k and on_new_block is not None and r > 1 and (r - 1) % k == 0
                and any((stack, cell, r) not in known for stack, cell in in_round)):
            on_new_block((r - 1) // k + 1, in_round)
        for slot in round_order(in_round, r, seed):
            if (slot.stack, slot.cell, r) in known:
                continue
            t0 = clock()
            store(slot.stack, slot.cell, r, measure(slot))
            window_seconds.append(clock() - t0)
            windows += 1
        measured = recent_mean(window_seconds)
        if policy.deadline_of is not None and measured:
            deadline = earliest(policy.deadline_of(measured))
        seconds_per_window = measured  # what a window of the rounds to come takes
        if measured is not None and policy.once_of is not None:
            seconds_per_window = max(0.5 * measured, measured - policy.once_of())
        by_cap = by_time = policy.max_rounds - r
        if deadline is not None and seconds_per_window:
            per_round = seconds_per_window * max(1, sum(len(s.active) for s in state.values()))
            by_time = int((deadline - clock()) // per_round)
        open_sentences = []
        # an A/B's tables stop on the budget itself, not on a forecast of it: its one pair is all it has
        timed = policy.forecast and not policy.gate and deadline is not None and seconds_per_window is not None
        room = (by_cap, by_time if timed else by_cap)
        for cell in list(state):
            cell_rounds[cell] = r
            left_out = set(unranked(cell)) if unranked is not None else set()
            judged = [s for s in stacks_of[cell] if s not in left_out]
            per_stack = {s: _per_round(figures[cell][s], r) for s in judged}
            reference = {s: _per_round(refs[cell][s], r) for s in judged}
            stop = _judge_cell(state[cell], per_stack, reference, policy)
            if r < policy.min_rounds:
                continue
            if stop is not None:
                leave(cell, stop, room)
                continue
            state[cell].active &= set(judged)  # the unranked ones had their least rounds
        if r >= policy.min_rounds and state:  # every cell still here races on, judged together for the time
            stops = _race(state, by_cap, policy.gate, throughout,
                          (deadline - clock(), seconds_per_window) if timed else None)  # type: ignore[operator]
            for cell, race_stop in stops.items():
                if race_stop is not None:
                    leave(cell, race_stop, room)
        for cell in state:
            open_sentences += _sentences(state[cell], cell, label)
        open_sentences = parted + open_sentences
        if on_round_end is not None:
            on_round_end(r, open_sentences)
        reason: StopReason | None = None
        if not state:
            reasons = set(cell_stop.values())
            reason = ("settled" if reasons == {"settled"} else "budget" if "budget" in reasons
                      else "max-rounds" if "max-rounds" in reasons else "out-of-reach")
        elif r >= policy.max_rounds:
            reason = "max-rounds"
        elif deadline is not None and seconds_per_window is not None:  # before the minimum too: a budget is a budget
            next_round = seconds_per_window * sum(len(s.active) for s in state.values())
            if clock() + next_round > deadline:
                fitting = ([] if policy.block_rounds else
                           _cells_that_fit(state, seconds_per_window, deadline - clock(), seed, r + 1))
                if not fitting:
                    reason = "budget"
                else:
                    for cell in [c for c in state if c not in fitting]:  # it stops at this round, as it would have
                        parted += _sentences(state.pop(cell), cell, label)
                        cell_stop[cell] = "budget"
                        timed_out.append(cell)
        if reason is not None:
            for cell in state:
                cell_stop[cell] = reason
                timed_out.append(cell)
            values = {cell: {stack: _per_round(by_round, cell_rounds.get(cell, r))
                             for stack, by_round in per_stack.items()} for cell, per_stack in figures.items()}
            references = {cell: {stack: _per_round(by_round, cell_rounds.get(cell, r))
                                 for stack, by_round in per_stack.items()} for cell, per_stack in refs.items()}
            return RoundsOutcome(rounds=r, stop_reason=reason, values=values, references=references,
                                 cell_stop=cell_stop, cell_rounds=cell_rounds, windows=windows,
                                 unsettled=open_sentences,
                                 horizon={c: throughout(c) for c in timed_out},
                                 seconds_per_window=sum(window_seconds) / len(window_seconds) if window_seconds else None)


def _judge_cell(cell: _CellState, per_stack: dict[str, list[float | None]],
                reference: dict[str, list[float | None]], policy: RoundsPolicy) -> StopReason | None:
    """Judge one cell after a round: 'settled' when nothing is left open, else None (open pairs stored)."""
    if not per_stack:  # nothing the verdict will rank: its figures are shown after the least rounds
        cell.inference, cell.open_pairs = None, []
        return "settled"
    if len(per_stack) == 1:
        values = next(iter(per_stack.values()))
        return "settled" if _one_stack_settled(values, policy) else None
    has_refs = all(v is not None for s in per_stack for v, f in zip(reference[s], per_stack[s]) if f is not None)
    cell.inference = judge_table(per_stack, reference if has_refs else None, block_rounds=policy.block_rounds,
                                 level=policy.level, margin=policy.margin, horizon=())
    gate = policy.gate if policy.gate and {policy.gate.head, policy.gate.base} <= set(per_stack) else None
    cell.open_pairs = (unresolved_pairs(cell.inference, every_pair=policy.every_pair) if gate is None
                       else [(gate.head, gate.base)] if gate.is_open(cell.inference) else [])
    return None if cell.open_pairs else "settled"


def _race(cells: Mapping[Hashable, _CellState], by_cap: int, gate: GateRule | None,
          throughout: Callable[[Hashable], Collection[str]],
          time_left: tuple[float, float] | None) -> dict[Hashable, StopReason | None]:
    """After the minimum rounds: keep racing only the open pairs within reach, and in each cell only their stacks.
    A pair is within reach when the rounds its forecast needs fit in the cap (`by_cap` rounds left) and, with a
    `time_left` = (seconds, seconds per window), in the rounds that time allows *at the cost of the stacks that stay*:
    the pairs are taken from the nearest to resolution on, each kept if its rounds fit at the cost of the stacks
    kept so far and its own (and a one-stack cell's window, which stays). Costing a round at every stack
    still in it (as before 2026-11-28) gave up pairs at the first look that the next look, with the others gone,
    found within reach again: a stack left and came back, its pairs short of the rounds in between (bench14: a
    neighbouring pair at 7 paired rounds of 28). No pair within reach: 'budget' when the cap would have allowed
    one, 'max-rounds' when the cap allows no more, else 'out-of-reach'; None: the cell races on. A pair of two stacks
    of the cell's `throughout` (measured in every round so far) is forecast at the final look it can still get; any
    other at the confidence sequence."""
    stops: dict[Hashable, StopReason | None] = {}
    candidates: list[tuple[int, int, Hashable, str, str]] = []
    within_cap: dict[Hashable, bool] = {}
    fixed = 0
    for cell, state in cells.items():
        if state.inference is None:  # a one-stack cell still short of its precision
            stops[cell] = None
            fixed += len(state.active)
            continue
        whole = set(throughout(cell))
        within_cap[cell] = False
        for a, b in state.open_pairs:
            found = state.inference.interval(a, b)
            need = (gate.rounds_needed(state.inference) if gate is not None and {a, b} == {gate.head, gate.base}
                    else rounds_to_resolve(state.inference, a, b, final=a in whole and b in whole))
            if need is None or found is None:
                continue
            more = need - found.rounds
            within_cap[cell] = within_cap[cell] or more <= by_cap
            if more <= by_cap:
                candidates.append((more, len(candidates), cell, a, b))
    kept: dict[Hashable, set[str]] = defaultdict(set)
    windows = fixed
    for more, _, cell, a, b in sorted(candidates, key=lambda c: c[:2]):
        added = {a, b} - kept[cell]
        if time_left is not None and more > time_left[0] // (time_left[1] * max(1, windows + len(added))):
            continue
        kept[cell] |= added
        windows += len(added)
    for cell, state in cells.items():
        if cell in stops:
            continue
        if not kept.get(cell):
            stops[cell] = "budget" if within_cap[cell] else "max-rounds" if by_cap <= 0 else "out-of-reach"
            continue
        state.active = kept[cell]
        stops[cell] = None
    return stops
