"""The resilience run (issue 14): what each stack does when its database restarts, drops its connections,
stalls, or has its connections reset by the network.

After a stack's closed-model cells (their peak 2xx/s is the reference) every fault gets its own window: an
open-model load at FAULT_LOAD_SHARE of that peak for WINDOW_S seconds with k6 (whose `--out json` records
every request, errors included, with its wall-clock end), the fault injected FAULT_AT_S into it. The
window's requests become a timeline of 100 ms bins (load/timeline.py) and analysis/recovery.py turns it into
the figures: failed requests, time to the first correct answer, time until 2xx/s is back within 10 % for a
second, or "never recovered" — a finding, shown as such. Afterwards pgarena checks that the stack, which it
does not restart, answers correctly again; one that does not is not faulted further. tx windows also check
the TPC-B invariants across the fault, counting requests whose outcome is unknown.

Faults (db/faults.py; the reset is a Toxiproxy toxic on the stack's own proxy, so resilience runs put every
stack behind one at a 0 ms round trip):
- pg-restart: `pg_ctl restart -m fast`; every connection is closed and the server is down until it is back;
- terminate: pg_terminate_backend on every backend of the stacks' role;
- stall: SIGSTOP of the postmaster and every server process for STALL_S, then SIGCONT;
- reset: Toxiproxy's reset_peer toxic for RESET_S: open connections are closed, new ones reset (TCP RST).
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import httpx

from pgarena.analysis.recovery import RecoveryUndefined, recovery
from pgarena.config.run import workload_parameters
from pgarena.contract import workloads as wl
from pgarena.contract.values import parse_json
from pgarena.db import faults
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.measure import start_cell
from pgarena.load.timeline import read_k6_timeline
from pgarena.load.window import run_window
from pgarena.pipeline.verified import known_wrong_columns
from pgarena.pipeline.context import LiveStack, RunContext
from pgarena.pipeline.plan import closed_peak
from pgarena.results.models import Cell, FaultResult
from pgarena.results.store import save
from pgarena.verify import http, txcheck
from pgarena.verify.checks import answer_ok

FAULTS = ("pg-restart", "terminate", "stall", "reset")
DESCRIPTIONS = {
    "pg-restart": "pg_ctl restart -m fast",
    "terminate": "pg_terminate_backend on every backend of the stacks' role",
    "stall": "SIGSTOP of PostgreSQL's processes for {stall:g} s, then SIGCONT",
    "reset": "Toxiproxy reset_peer on the stack's connections for {reset:g} s",
}
FAULT_LOAD_SHARE = 0.5
"""The window's arrival rate, as a share of the stack's closed-model peak 2xx/s: steady, with headroom."""
WINDOW_S = 20.0
FAULT_AT_S = 7.0
"""The fault starts this far into the window: k6's start-up (≈ 0.5 s) plus the 5 s baseline before it."""
BASELINE_S = 5.0
"""Seconds of steady load before the fault whose 2xx rate is the reference."""
STALL_S = 3.0
RESET_S = 2.0
RECOVERY_CHECK_S = 30.0
"""How long after the window pgarena waits for the stack to answer correctly again."""
FAULT_WORKLOADS = (wl.USERS, wl.PERF_TEST, wl.PERF_MINIMAL, wl.TX)


def run_faults(ctx: RunContext, live: LiveStack) -> None:
    """Every configured fault on every loadable workload of one stack (see the module docstring)."""
    config = ctx.config
    workloads = [w for w in config.workloads if w in FAULT_WORKLOADS and w in live.loadable]
    broken: str | None = None
    for workload in workloads:
        parameter = workload_parameters(config, workload)[0]
        for fault in config.faults:
            if broken is not None:
                result = _not_run(ctx, live, workload, parameter, fault, broken)
            else:
                result = _one_fault(ctx, live, workload, parameter, fault)
                if result.recovered_without_restart is False:
                    broken = f"the stack did not recover from {fault} on {workload}"
            ctx.results.resilience.append(result)
            save(ctx.results, ctx.run_dir)


def _not_run(ctx: RunContext, live: LiveStack, workload: str, parameter: int | None, fault: str,
             reason: str) -> FaultResult:
    ctx.log(f"[{live.id}] {fault} on {workload}: not run ({reason})")
    return FaultResult(stack=live.id, workload=workload, parameter=parameter, fault=fault,  # type: ignore[arg-type]
                       description=_description(fault), engine=ctx.engine.name, status="not-run",  # type: ignore[union-attr]
                       reason=reason)


def _description(fault: str) -> str:
    return DESCRIPTIONS[fault].format(stall=STALL_S, reset=RESET_S)


def _inject(ctx: RunContext, live: LiveStack, fault: str) -> None:
    if fault == "pg-restart":
        pid = faults.restart(ctx.db)
        if ctx.db_group is not None:
            ctx.db_group.add_tree(pid)  # the new server's CPU is the database's too
    elif fault == "terminate":
        faults.terminate_backends(ctx.db)
    elif fault == "stall":
        faults.stall(ctx.db, STALL_S)
    else:
        name = live.db_proxy.reset_peer(0)  # type: ignore[union-attr]
        try:
            time.sleep(RESET_S)
        finally:
            live.db_proxy.remove_toxic(name)  # type: ignore[union-attr]


def _one_fault(ctx: RunContext, live: LiveStack, workload: str, parameter: int | None, fault: str) -> FaultResult:
    config, db = ctx.config, ctx.db
    base = dict(stack=live.id, workload=workload, parameter=parameter, fault=fault, description=_description(fault),
                engine=ctx.engine.name)  # type: ignore[union-attr]
    why = faults.unavailable(db, fault)
    if fault == "reset" and live.db_proxy is None:
        why = "needs the stack behind Toxiproxy (the resilience profile puts it there)"
    peak = closed_peak(ctx.results.cells, live.id, workload, parameter, live_rtt(config))
    if why is None and peak is None:
        why = "no valid closed-model cell of this workload to take the load's rate from"
    if why is not None:
        return _not_run(ctx, live, workload, parameter, fault, why)
    assert peak is not None
    rate = round(FAULT_LOAD_SHARE * peak, 1)
    cell = Cell(stack=live.id, workload=workload, parameter_name=wl.PARAMETER_NAMES[workload], parameter=parameter,
                vus=config.open_connections, model="open", arrival_rate=rate,
                arrival_rate_spec=f"{FAULT_LOAD_SHARE:.0%}", engine=ctx.engine.name,  # type: ignore[union-attr]
                warmup_seconds=0, duration_seconds=WINDOW_S, db_rtt_ms=live_rtt(config))
    # NOTE: the stack's ❌ columns and a wrong content type, known from verification, are not judged again
    # (as every other schedule's cells: pipeline/cells.py), or its variants would read as wrongly answered
    run = start_cell(cell, engine=ctx.engine, config=config, db=db, base_url=live.base_url,  # type: ignore[arg-type]
                     run_dir=ctx.run_dir, routes=live.routes, log=ctx.log, variants_cache=ctx.variants_cache,
                     known_wrong=known_wrong_columns(ctx, cell), answer=live.answer)
    stem = f"{run.label}-{fault}"
    path = run.raw_dir / f"{stem}.requests.json.gz"
    spec = replace(run.spec, rate=rate, timeline_path=path)
    live.use_network(cell)
    ctx.log(f"[{live.id}] {fault} on {workload}: {rate:,.0f} req/s ({FAULT_LOAD_SHARE:.0%} of its peak {peak:,.0f}), "
            f"{_description(fault)} at {FAULT_AT_S:g} s of {WINDOW_S:g} s")
    tx_before = txcheck.snapshot(db) if workload == wl.TX else None
    outcome: dict = {}

    def generate() -> None:
        try:
            outcome["window"] = run_window(ctx.engine, spec, WINDOW_S, run.raw_dir, stem, config)  # type: ignore[arg-type]
        except EngineOutputError as exc:
            outcome["error"] = str(exc)

    origin = time.time()
    generator = threading.Thread(target=generate, name="pgarena-fault-load", daemon=True)
    generator.start()
    time.sleep(max(0.0, origin + FAULT_AT_S - time.time()))
    start = time.time() - origin
    try:
        _inject(ctx, live, fault)
    finally:
        end = time.time() - origin
    generator.join(WINDOW_S + 2 * config.http_timeout_s + 120)
    result = FaultResult(**base, rate_rps=rate, peak_rps=round(peak, 1), window_seconds=WINDOW_S,  # type: ignore[arg-type]
                         fault_start_s=round(start, 3), fault_end_s=round(end, 3), status="not-run")
    if "window" not in outcome:
        result.reason = outcome.get("error", "the load generator did not finish")
    else:
        _measure(result, path, origin, start, end)
        if tx_before is not None:
            window = outcome["window"]
            unknown = window.outcome.errors.total
            result.tx_invariants = txcheck.check(tx_before, txcheck.snapshot(db), window.outcome.answered_2xx,
                                                 unknown)
    result.recovered_without_restart = _answers_again(ctx, live, workload, parameter)
    ctx.log(f"[{live.id}] {fault} on {workload}: {_line(result)}")
    return result


def live_rtt(config) -> float | None:
    """The round trip resilience cells are measured at (the stacks sit behind the proxy at the first level)."""
    return config.db_rtt_ms[0] if config.db_rtt_ms else None


def _measure(result: FaultResult, path, origin: float, start: float, end: float) -> None:
    try:
        timeline = read_k6_timeline(path, origin_unix_s=origin, duration_s=WINDOW_S + 3)
    except EngineOutputError as exc:
        result.reason = str(exc)
        return
    result.bin_seconds = timeline.bin_s
    result.timeline_ok = list(timeline.ok_2xx)
    result.timeline_failed = list(timeline.failed())
    try:
        rec = recovery(timeline, start, end, baseline_window_s=BASELINE_S)
    except RecoveryUndefined as exc:
        result.reason = str(exc)
        return
    result.status = rec.status  # type: ignore[assignment]
    result.baseline_rps = round(rec.baseline_rps, 1)
    result.failed_requests, result.unanswered = rec.failed_requests, rec.unanswered
    result.errors_by_kind = dict(rec.errors_by_kind)
    result.first_ok_after_s, result.recovered_after_s = rec.first_ok_after_s, rec.recovered_after_s


def _answers_again(ctx: RunContext, live: LiveStack, workload: str, parameter: int | None) -> bool:
    """The stack, not restarted, answers the workload's request right within RECOVERY_CHECK_S (bounded)."""
    deadline = time.monotonic() + RECOVERY_CHECK_S
    request = wl.load_request(workload, parameter)
    expected_rows = wl.expected_rows(workload, parameter)
    with http.http_client(live.base_url, ctx.config.http_timeout_s, live.routes) as client:
        while time.monotonic() < deadline and not live.crashed():
            try:
                response = http.send(client, request)
                if workload == wl.TX:
                    body = parse_json(response.content) if response.status_code == 200 else None
                    if isinstance(body, dict) and isinstance(body.get("abalance"), int):
                        return True
                elif answer_ok(response, workload, expected_rows, live.answer):
                    return True
            except (httpx.HTTPError, ValueError):  # no answer, or no JSON: not yet
                pass
            time.sleep(0.5)
    return False


def _line(r: FaultResult) -> str:
    if r.status == "not-run":
        return f"not measured ({r.reason})"
    failed = "not measured" if r.failed_requests is None else f"{r.failed_requests:,}"
    recovered = "never" if r.recovered_after_s is None else f"after {r.recovered_after_s:.1f} s"
    first = "none" if r.first_ok_after_s is None else f"{r.first_ok_after_s:.1f} s"
    tx = "" if r.tx_invariants is None else f", TPC-B invariants {'hold' if r.tx_invariants.holds else 'BROKEN'}"
    return (f"{r.status}: {failed} failed, first correct answer {first} after the fault, back within 10 % {recovered}"
            f"{tx}{'' if r.recovered_without_restart else ', did NOT answer again without a restart'}")
