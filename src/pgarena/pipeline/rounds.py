"""How many rounds an interleaved phase may take and the rule that stops them (`load.scheduler.RoundsPolicy`)."""

from __future__ import annotations

from pgarena.analysis.abgate import GATE_MIN_BLOCKS, GATE_MIN_ROUNDS, GateRule
from pgarena.config.run import RunConfig
from pgarena.load.scheduler import RoundsPolicy


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
