"""The conditions a run's figures were measured under, as plain data for both reports: how its windows
were scheduled (interleaved rounds or stack after stack) and the database's own ceiling per workload.

Both are read from results.json only (`RunResults.schedule`, `RunResults.ceilings`, each stack's
`idle_cpu_fraction`); the Markdown and HTML exporters render the same rows.
"""

from __future__ import annotations

from pgarena.analysis.verdicts import every_pair_of
from pgarena.contract.flags import ABOVE_CEILING
from pgarena.contract import idle
from pgarena.results.models import Cell, DbCeiling, PhaseRecord, RunResults, ScheduleRecord

IDLE_CPU_DISTURBANCE = 0.05
"""A stack that used more than 5 % of one CPU while other stacks were measured may have disturbed them
(interleaved.IDLE_CPU_LIMIT, restated here so rendering does not import the runner)."""
NO_DATABASE_WORKLOADS = ("static",)
"""Workloads that never touch the database: no ceiling."""


def ceiling_share(results: RunResults, cell: Cell) -> float | None:
    """The cell's median 2xx/s as a share of the database's ceiling measured under its conditions (its round
    trip, min(VUs, pool size) connections: `RunResults.ceiling_for`; 1.0 = the whole ceiling); None when there
    is no such ceiling or no figure."""
    ceiling = results.ceiling_for(cell)
    if ceiling is None or ceiling.tps <= 0 or cell.summary is None:
        return None
    return cell.summary.rps.median / ceiling.tps


def ceiling_text(results: RunResults, cell: Cell) -> str:
    """'62 %', '120 % ⚠ above the ceiling' (a measurement problem: flags.ABOVE_CEILING), '—, no database'
    (static), or 'not measured'."""
    if cell.workload in NO_DATABASE_WORKLOADS:
        return "—, no database"
    share = ceiling_share(results, cell)
    if share is None:
        return "not measured"
    return f"{share * 100:.0f} %" + (" ⚠ above the ceiling" if share > 1 else "")


def _conditions_label(ceiling: DbCeiling) -> str:
    return "direct" if ceiling.db_rtt_ms is None else f"{ceiling.db_rtt_ms:g} ms"


def ceiling_rows(results: RunResults) -> list[dict]:
    """One row per measured ceiling: workload, parameter, round trip, connections, tps with its interval over
    the runs, the runs, statements, protocol, seconds."""
    return [{"workload": c.workload, "parameter": "–" if c.parameter is None else f"{c.parameter_name}={c.parameter}",
             "round_trip": _conditions_label(c), "connections": c.connections, "tps": round(c.tps, 1),
             "interval": "–" if c.tps_low is None or c.tps_high is None else f"{c.tps_low:,.0f}–{c.tps_high:,.0f}",
             "runs": len(c.runs_tps) or 1, "statements": c.statements, "protocol": c.protocol, "seconds": c.seconds}
            for c in results.ceilings]


def ceiling_note(results: RunResults) -> str:
    """What the ceiling is, or why it is missing."""
    if not results.ceilings:
        why = results.ceiling_unavailable or "this run did not measure it"
        return f"The database ceiling was not measured: {why}."
    above = sum(1 for c in results.cells if (share := ceiling_share(results, c)) is not None and share > 1)
    return ("pgbench ran each workload's statements alone (prepared, generic plan), on the server CPU set, under "
            "each cell's conditions: through the cell's round trip to the database and over min(VUs, pool size) "
            "connections, in short runs (the interval is over them): the most any stack could get from this "
            "database there. Each cell's DB ceiling is its 2xx/s as a share of the ceiling of its conditions "
            "(\"not measured\" where none was); static touches no database and has none."
            + (f" {above} cell(s) above 100 %: a measurement problem (flag `{ABOVE_CEILING}`), not a finding."
               if above else ""))


def _phase_sentence(phase: PhaseRecord, every_pair: bool = False) -> str:
    sentence = _stop_sentence(phase, every_pair)
    return sentence if not phase.not_measured else f"{sentence}; {not_measured_sentence([phase])}"


def not_measured_sentence(phases: list[PhaseRecord]) -> str | None:
    """'N table(s) not measured: the time budget was spent before their least rounds (a, b)' (None: none); it
    opens with the count, so it starts a line as it is."""
    titles = [title for phase in phases for title in phase.not_measured]
    if not titles:
        return None
    return (f"{len(titles)} table(s) not measured: the time budget was spent before their least rounds "
            f"({', '.join(titles)})")


def _stop_sentence(phase: PhaseRecord, every_pair: bool) -> str:
    if phase.rounds == 0 and phase.stop_reason == "budget":
        return "not measured: the time budget was spent before its least rounds"
    unsettled = (f" with {len(phase.unsettled)} pair(s) unsettled: {'; '.join(phase.unsettled)}"
                 if phase.unsettled else "")
    if phase.stop_reason == "settled":
        return f"settled after {phase.rounds} round(s): every {'' if every_pair else 'adjacent '}pair ordered or equivalent"
    if phase.stop_reason == "max-rounds":
        return f"stopped at the round cap ({phase.rounds} rounds){unsettled}"
    if phase.stop_reason == "budget":
        return f"stopped when the time budget ran out ({phase.rounds} rounds){unsettled}"
    if phase.stop_reason is None:
        return f"not finished ({phase.rounds} round(s) so far)"
    return f"stopped: {phase.stop_reason} ({phase.rounds} rounds){unsettled}"


def _phase_window(phase: PhaseRecord) -> str | None:
    """'2 s after a 1 s re-warm': the windows of one phase (None: not recorded, results before this field)."""
    if phase.window_seconds is None:
        return None
    rewarm = "" if phase.rewarm_seconds is None else f" after a {phase.rewarm_seconds:g} s re-warm"
    if rewarm and phase.rewarm_lead_in:
        rewarm += " in the same generator process"
    if phase.idle_rewarm_windows:
        rewarm += (f"; {phase.idle_rewarm_windows} of its windows after an idle gap, "
                   f"{phase.idle_rewarm_seconds / phase.idle_rewarm_windows:.2g} s more on average")
    return f"{phase.window_seconds:g} s{rewarm}"


def _rewarm_phrase(record: ScheduleRecord) -> str | None:
    """', 0.5 s re-warm before each window, up to 1.5 s more after …': the schedule's re-warm (None: not recorded)."""
    if record.rewarm_seconds is None:
        return None
    phrase = f", {record.rewarm_seconds:g} s re-warm before each window"
    if record.idle_rewarm_seconds:
        phrase += f", {idle.rule_sentence(record.idle_rewarm_seconds)}"
        if record.idle_rewarm_exempt:
            phrase += (f" (not for {', '.join(record.idle_rewarm_exempt)}: their runtimes were measured not to read "
                       "slower after an idle gap)")
    return phrase


def schedule_summary(results: RunResults) -> dict:
    """The schedule as plain data: kind, seed, re-warm, phases (with a sentence each), sequential fallbacks
    and stacks whose idle CPU may have disturbed the others."""
    record = results.schedule
    disturbances = [{"stack": s.id, "idle_cpu_fraction": round(s.idle_cpu_fraction, 4)} for s in results.stacks
                    if s.idle_cpu_fraction is not None and s.idle_cpu_fraction > IDLE_CPU_DISTURBANCE]
    if record is None:
        return {"kind": "sequential", "recorded": False, "seed": None, "rewarm_seconds": None, "rewarm": None,
                "phases": [],
                "fallbacks": [], "disturbances": disturbances, "not_measured": None,
                "note": "No schedule was recorded (results from before schedules): each stack's cells were measured "
                        "back to back, so ranks use each cell's own interval."}
    # since the idle gap's re-warm was recorded (2026-11-29), a round takes each stack's cells together
    together = "" if record.idle_rewarm_seconds is None else " (each stack's cells one after another)"
    note = ("Interleaved: every stack up together; each round measured every (stack, cell) once in a fresh "
            f"random order{together}, so stacks are compared within rounds." if record.kind == "interleaved" else
            "Sequential: each stack's cells were measured back to back; ranks use each cell's own interval.")
    return {
        "kind": record.kind, "recorded": True, "seed": record.seed, "rewarm_seconds": record.rewarm_seconds,
        "rewarm": _rewarm_phrase(record),
        "phases": [{"name": p.name, "cells": p.cells, "windows": p.windows, "rounds": p.rounds,
                    "stop_reason": p.stop_reason, "unsettled": list(p.unsettled), "sentence": _phase_sentence(p, every_pair_of(results)),
                    "window": _phase_window(p)}
                   for p in record.phases],
        "fallbacks": [{"stack": stack, "reason": reason} for stack, reason in record.sequential_fallback.items()],
        "disturbances": disturbances, "note": note, "not_measured": not_measured_sentence(record.phases),
    }
