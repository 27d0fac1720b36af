"""The idle gap's re-warm: a window that follows a long time without load on its stack gets a longer re-warm.

In interleaved rounds a stack waits while every other stack takes its window: about 37 s between its windows with
22 stacks in a round. A Node.js stack read about 17 % slower after 45 s without load than after 2 s, and still
recovering after the 0.5 s re-warm and the 1 s window (V8's memory reducer shrinks an idle heap, and the next load
starts on a small one); after 20 s, 2–3 % slower. From the first 2xx answers on after a 45 s gap, its rate per
0.25 s was 0.33, 0.57, 0.70, 0.73, 0.78, 0.76, 0.82, 0.87, 0.88, 0.92, then 1.00 of its rate after 2 s: steady
after about 2.5 s of load (scripts/idle_gap.py; docs/methodology.md, "The idle gap"). Python, Bun and Go stacks
showed no such drop.

So every stack gets the same rule: its window's re-warm is the phase's, plus up to `RunConfig.idle_rewarm_s` more
when the stack has had no load for longer than `IDLE_FROM_S` — growing in proportion to the idle time beyond it, in
full from `IDLE_FULL_S` on — unless its stack.toml declares `[run] idle_rewarm = false`, for a runtime measured not to
read slower after a gap beside other stacks' load (scripts/idle_gap.py --interleaved: the CPython and actix stacks).
Rounds narrowed by the race (a few stacks each) and the tables after the headline, whose rounds take each stack's
cells one after another (schedule.round_order), rarely leave a stack that long; the first rounds of a wide headline
do.
"""

from __future__ import annotations

IDLE_FROM_S = 15.0
"""No extra re-warm up to this many seconds without load (after 20 s a Node.js stack read 2–3 % slow)."""
IDLE_FULL_S = 35.0
"""The whole extra re-warm from this many seconds without load on (after 45 s, 17 % slow)."""
DEFAULT_IDLE_REWARM_S = 1.5
"""The extra re-warm after a gap of `IDLE_FULL_S` or more (RunConfig.idle_rewarm_s): with a 0.5 s re-warm the window
starts after 2 s of load, when node-express-pg's rate after a 45 s gap was back at its rate after 2 s."""


def idle_rewarm_s(idle_s: float | None, extra_s: float) -> float:
    """The re-warm to add before a window of a stack that had no load for `idle_s` seconds (None: not known, none
    added): none up to `IDLE_FROM_S`, `extra_s` from `IDLE_FULL_S` on, in proportion between."""
    if idle_s is None or extra_s <= 0 or idle_s <= IDLE_FROM_S:
        return 0.0
    return round(extra_s * min(1.0, (idle_s - IDLE_FROM_S) / (IDLE_FULL_S - IDLE_FROM_S)), 3)


def rule_sentence(extra_s: float) -> str:
    """'up to 1.5 s more after more than 15 s without load (in full after 35 s)': the rule, for the report."""
    return (f"up to {extra_s:g} s more after more than {IDLE_FROM_S:g} s without load (in full after "
            f"{IDLE_FULL_S:g} s)")
