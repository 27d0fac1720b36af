"""Restarting an A/B's stacks between blocks of rounds: a new pair of executions per block (analysis/executions.py).

`pgarena ab` sets `restart_every` = k: before rounds k+1, 2k+1, … the scheduler calls `restart_block`, which stops
both stacks, starts them again on the ports they had (the cells' generator URLs stay valid), in a random order
seeded by the run's seed and the block, checks each briefly as a restart at another pool size is checked (its
health path, then one request per verified workload judged whole), and warms it again at every cell it still races
in until steady, as its first start was (`InterleavedRun._warm_stacks`). A stack that does not come back fails its cells with the reason, so the
block (and every later one) holds no pair, and the gate says "could not tell" rather than judge one execution.
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Hashable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Protocol

from pgarena.stack.launch import port_in_use

if TYPE_CHECKING:
    from pgarena.pipeline.context import LiveStack, RunContext
    from pgarena.results.models import ScheduleRecord


class Restartable(Protocol):
    """What `restart_block` needs of an interleaved run (pipeline/interleaved.InterleavedRun)."""

    ctx: RunContext
    lives: dict[str, LiveStack]
    record: ScheduleRecord
    pool: int | None
    scope: ExitStack | None
    execution_scopes: dict[str, ExitStack]

    def _warm_stacks(self, phase: Any, keys: Collection[tuple] | None = None, again: bool = False) -> None: ...


class PhaseCells(Protocol):
    cells: dict[tuple, Any]


PORT_FREE_WAIT_S = 10.0
"""How long a stopped stack's port may take to be free again before its restart is attempted anyway."""


def _wait_port_free(port: int | None) -> None:
    deadline = time.monotonic() + PORT_FREE_WAIT_S
    while port is not None and port_in_use(port) and time.monotonic() < deadline:
        time.sleep(0.1)


def restart_block(run: Restartable, phase: PhaseCells, block: int,
                  racing: Sequence[tuple[str, Hashable]] | None = None) -> None:
    """Stop and start again the stacks of `run` for `block` (module docstring): those of the (stack, cell) pairs
    still `racing` (None: every live stack), each warmed again at the cells it still races in."""
    from pgarena.pipeline.lifecycle import bring_up

    ctx = run.ctx
    cells = None if racing is None else {(stack, *cell) for stack, cell in racing}  # type: ignore[misc]
    order = sorted(run.lives) if cells is None else sorted({key[0] for key in cells} & set(run.lives))
    random.Random(f"{run.record.seed}-{block}").shuffle(order)
    ctx.log(f"block {block}: restarting {', '.join(order)} (in this order)")
    stopped = {}
    for stack_id in order:
        live = run.lives[stack_id]
        scope = run.execution_scopes.get(stack_id)
        if scope is None or run.scope is None or live.server.pid is None:
            continue  # brought up outside an execution scope (a remote target): not restarted
        stopped[stack_id] = live.port
        scope.close()
    for stack_id in order:
        if stack_id not in stopped:
            continue
        old = run.lives[stack_id]
        _wait_port_free(stopped[stack_id])
        scope = run.scope.enter_context(ExitStack())  # type: ignore[union-attr]
        run.execution_scopes[stack_id] = scope
        live = bring_up(ctx, old.stack, old.info, "run", scope, pool_size=run.pool, restart=True,
                        port=stopped[stack_id], execution=block)
        if live is None:
            reason = f"did not start again for block {block} of its A/B (the run log says why)"
            ctx.log(f"[{stack_id}] {reason}")
            for key, cell in phase.cells.items():
                if key[0] == stack_id and cell.status != "failed":
                    cell.status, cell.error = "failed", reason
            continue
        run.lives[stack_id] = live
    restarted = {key for key in phase.cells if key[0] in stopped and (cells is None or key in cells)}
    run._warm_stacks(phase, restarted, again=True)
