"""One cell measured: warm-up, repetitions with resource sampling and answer checks, tx invariants,
and the cell's summary and flags (median and range over the repetitions, docs/methodology.md)."""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pgarena.config.run import RunConfig
from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape
from pgarena.contract.flags import (
    QUERIES_WRONG,
    VARIANTS_WRONG,
)
from pgarena.contract.values import Verdict
from pgarena.db import accounting
from pgarena.db.postgres import Database
from pgarena.load import warmup
from pgarena.load.distributed import GeneratorPlace, distributed
from pgarena.load.engines import Engine, LoadOutcome, LoadSpec
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.slo import LevelResult, SloTarget, search_max_sustainable
from pgarena.load.summary import keep_repeating
from pgarena.load.window import (
    workload_stem,
    cell_label,
    request_spec,
    run_window,
)
from pgarena.load.windowrecord import Window, window_cpu_seconds
from pgarena.results.models import Cell, Repetition, SloPoint, SloSearchResult, Warmup
from pgarena.stats.intervals import relative_half_width
from pgarena.system.process import NotReady, ServerProcess
from pgarena.system.resources import CpuMeters, OwnCpuSampler, TreeSampler
from pgarena.system.speedprobe import ProbeReading
from pgarena.verify import txcheck, variants, windowcheck
from pgarena.verify.checks import SAMPLE_INTERVAL_S, AnswerSampler, check_variants


def _prepare_variants(cell: Cell, *, engine: Engine, config: RunConfig, db: Database, base_url: str,
                      routes: dict[str, str], raw_dir: Path, label: str, log: Callable[[str], None],
                      cache: dict | None, known_wrong: Sequence[str] = (),
                      answer: AnswerShape | None = None) -> tuple[LoadSpec, list[variants.Variant], set[int]]:
    """The cell's load spec, its read variants with their expected answers (tx: none; the sampler's tx
    requests are drawn per window) and, for tx, the accounts the generator's bodies touch.

    Every read variant is sent once and judged whole before the warm-up; a wrong one flags the cell."""
    spec = request_spec(cell.workload, cell.parameter, stack=cell.stack, label=label, raw_dir=raw_dir,
                        base_url=base_url, routes=routes, connections=cell.vus, config=config,
                        rate=cell.arrival_rate if cell.model == "open" else None)
    if spec.bodies_file is not None:  # tx
        bodies = [line for line in spec.bodies_file.read_bytes().split(b"\n") if line]
        cell.variants = len(set(bodies))
        return spec, [], variants.tx_aids(bodies)
    key = (cell.workload, cell.parameter)
    cases = cache[key] if cache is not None and key in cache else variants.read_variants(db, cell.workload,
                                                                                         cell.parameter)
    if cache is not None:
        cache[key] = cases
    cell.variants = len(cases)
    cell.variants_failed, cell.variants_failure = check_variants(
        base_url, cell.workload, cases, engine.request_headers(spec), config.http_timeout_s, routes, known_wrong,
        answer)
    if cell.variants_failed:
        cell.flags.append(VARIANTS_WRONG)
        log(f"  {cell.variants_failed} of {len(cases)} variants answered wrongly before the load: "
            f"{cell.variants_failure}")
    return spec, cases, set()


def _tx_sample_cases(db: Database, cell: Cell, index: int, avoid: set[int]) -> list[variants.Variant]:
    """The sampler's tx requests for one window: on accounts no other request touches (so each balance is
    predictable), enough for one every SAMPLE_INTERVAL_S; their accounts are added to `avoid`."""
    count = math.ceil(cell.duration_seconds / SAMPLE_INTERVAL_S) + 4
    bodies = variants.tx_sampler_bodies(count, zlib.crc32(f"{cell.stack}/{cell_label(cell)}/{index}".encode()), avoid)
    avoid |= variants.tx_aids(bodies)
    return variants.tx_variants(db, bodies)


@dataclass
class CellRun:
    """One cell being measured, window by window: its load spec, request variants, raw-output folder and
    tx bookkeeping.

    Sequential schedules measure a cell's windows back to back (`measure_cell`); interleaved ones measure
    one window of it per round, between other stacks' windows (`measure_repetition`). tx changes are taken
    per window (a snapshot right before its warm-up and right after its measured window, while no other
    stack is under load) and added up, so other stacks' transactions between two windows never count.
    """

    cell: Cell
    spec: LoadSpec
    run_dir: Path
    raw_dir: Path
    label: str
    cases: list[variants.Variant] = field(default_factory=list)
    """Read workloads: the request variants with their expected answers (the sampler's requests)."""
    tx_avoid: set[int] = field(default_factory=set)
    """tx: accounts the generator's bodies touch (the sampler's transactions use others)."""
    known_wrong: tuple[str, ...] = ()
    """Columns verification already judged ❌ for this stack: not judged again under load (answers.py)."""
    headers: list[tuple[str, str | None]] = field(default_factory=list)
    """The generator's request headers, which the sampler sends too."""
    answer: AnswerShape | None = None
    """The stack's declared answer shape (stack.toml `[answer]`): the sampler undoes it before judging."""
    tx_changes: txcheck.TxSnapshot | None = None
    object_pattern: Any = None
    """What makes a statement the workload's (accounting.object_pattern, read once before the first window)."""
    nested_patterns: Any = accounting.DEFAULT_NESTED_PATTERNS
    """graphql-nested / users-posts: what reads the posts and the users (accounting.nested_patterns)."""
    answered_200: int = 0
    unknown_outcome: int = 0
    places: tuple[GeneratorPlace, ...] = ()
    """Where its generators run: more than one, one k6 process per place (distributed.py)."""

    def count(self, outcome: LoadOutcome) -> None:
        """Add a window's 200 answers (its lead-in's too) and its requests of unknown outcome (no answer at all)."""
        self.answered_200 += outcome.answered_2xx + outcome.uncounted_2xx
        self.unknown_outcome += outcome.errors.timeout + outcome.errors.connect + outcome.errors.other


def window_result(window: Window, run: CellRun | None = None) -> warmup.WindowResult:
    """A generator window as the warm-up reads it (its answers and unknown outcomes added to `run`'s tx
    bookkeeping)."""
    if run is not None:
        run.count(window.outcome)
    return warmup.WindowResult(rps=window.outcome.rps, duration_s=window.outcome.duration_seconds,
                               answered_2xx=window.outcome.answered_2xx)


def start_cell(cell: Cell, *, engine: Engine, config: RunConfig, db: Database, base_url: str, run_dir: Path,
               routes: dict[str, str], log: Callable[[str], None], variants_cache: dict | None = None,
               known_wrong: Sequence[str] = (), places: Sequence[GeneratorPlace] = (),
               answer: AnswerShape | None = None) -> CellRun:
    """The spec, variants (checked once, before any load: `_prepare_variants`) and files of a cell before
    its first window; whether window accounting is possible on this database. `places`: where its
    generators run (more than one: every window of the cell, warm-ups included, is distributed)."""
    raw_dir = run_dir / "raw" / cell.stack
    raw_dir.mkdir(parents=True, exist_ok=True)
    label = cell_label(cell)
    spec, cases, tx_avoid = _prepare_variants(cell, engine=engine, config=config, db=db, base_url=base_url,
                                              routes=routes, raw_dir=raw_dir, label=label, log=log,
                                              cache=variants_cache, known_wrong=known_wrong, answer=answer)
    cell.window_accounting_unavailable = accounting.available(db)
    checked = cell.window_accounting_unavailable is None
    pattern = accounting.object_pattern(db, cell.workload) if checked else None
    nested = accounting.nested_patterns(db) if checked and cell.workload in wl.NESTED_LISTS else None
    return CellRun(cell=cell, spec=spec, run_dir=run_dir, raw_dir=raw_dir, label=label, cases=cases,
                   tx_avoid=tx_avoid, headers=engine.request_headers(spec), known_wrong=tuple(known_wrong),
                   answer=answer,
                   tx_changes=txcheck.ZERO if cell.workload == wl.TX else None, object_pattern=pattern,
                   nested_patterns=nested or accounting.DEFAULT_NESTED_PATTERNS, places=tuple(places))


def warm_window(run: CellRun, *, engine: Engine, config: RunConfig, db: Database | None = None,
                seconds: float = warmup.WINDOW_S) -> warmup.WindowResult:
    """One uncounted window of the cell's warm-up (warmup.py); its 2xx answers count for tx. With `db`
    (interleaved schedules, whose tx changes are summed per window) its tx changes are added to the cell's."""
    tx_before = txcheck.snapshot(db) if db is not None and run.tx_changes is not None else None
    spec = replace(run.spec, latencies=False)
    window = window_result(run_window(engine, spec, seconds, run.raw_dir, f"{run.label}-warmup", config, run.places),
                           run)
    if tx_before is not None:
        run.tx_changes = txcheck.add(run.tx_changes, tx_before, txcheck.snapshot(db))  # type: ignore[arg-type]
    return window


def warm_until_steady(run: CellRun, *, engine: Engine, config: RunConfig, minimum_s: float) -> Warmup:
    """The cell's warm-up (warmup.py), its windows back to back (the sequential schedule): until steady, at least
    `minimum_s`, at most `config.warmup_cap_s`; not counted, but its 2xx answers count for tx."""
    return warmup.warm_up(lambda seconds: warm_window(run, engine=engine, config=config, seconds=seconds),
                          minimum_s=minimum_s, cap_s=config.warmup_cap_s).record


def rewarm(run: CellRun, *, engine: Engine, config: RunConfig, seconds: float, stem: str) -> None:
    """A window at the cell's load that is not counted (its 200 answers still count for tx)."""
    if seconds <= 0:
        return
    window = run_window(engine, replace(run.spec, latencies=False), seconds, run.raw_dir, f"{run.label}-{stem}",
                        config, run.places)
    run.count(window.outcome)


def lead_in_applies(engine: Engine, open_model: bool, places: Sequence[GeneratorPlace]) -> bool:
    """Whether a window's re-warm is its generator's lead-in (LoadSpec.lead_in_s) rather than a process of its
    own: an engine that can cut it (oha), the closed model, one generator on this machine."""
    return engine.lead_in and not open_model and not distributed(places)


def measure_repetition(run: CellRun, *, engine: Engine, config: RunConfig, db: Database, server: ServerProcess,
                       base_url: str, routes: dict[str, str], cpu: CpuMeters, round_index: int | None = None,
                       rewarm_s: float = 0.0) -> Repetition:
    """One measured window of the cell (preceded by `rewarm_s` of uncounted load: the same generator process's
    lead-in where `lead_in_applies`, else a generator run of its own), appended to its
    repetitions: the generator with pgarena's answer sampler beside it (checks.py) and pg_stat_statements
    read right before and right after it (windowcheck.py). Raises NotReady when the stack has exited."""
    cell, spec = run.cell, run.spec
    if server.exit_code() is not None:
        raise NotReady(f"the stack exited (code {server.exit_code()}) during the cell")
    index = len(cell.repetitions) + 1
    tx_before = txcheck.snapshot(db) if run.tx_changes is not None and round_index is not None else None
    lead_in = rewarm_s if lead_in_applies(engine, spec.rate is not None, run.places) else 0.0
    gap_before = cpu.probe.load_starts(time.monotonic_ns()) if cpu.probe is not None else None
    if not lead_in:
        rewarm(run, engine=engine, config=config, seconds=rewarm_s, stem=f"rewarm{index}")
    stem = f"{run.label}-rep{index}"
    is_tx = cell.workload == wl.TX
    sample_cases = _tx_sample_cases(db, cell, index, run.tx_avoid) if is_tx else run.cases
    sampler = AnswerSampler(base_url, cell.workload, sample_cases, run.headers, config.http_timeout_s, routes,
                            reuse=not is_tx, known_wrong=run.known_wrong, answer=run.answer)
    # NOTE: pg_stat_statements is read right around the generator and the sampler, outside the CPU window.
    before = accounting.read_counts(db) if cell.window_accounting_unavailable is None else None
    # NOTE: PostgreSQL's tree (a backend per pooled connection of every stack up) is walked only when no cgroup
    # counts its CPU: only its CPU is reported, and walking 200 backends took tens of ms between windows.
    trees = {"stack": server.pid, "db": None if cpu.exact("db") else db.postmaster_pid}
    with OwnCpuSampler() as own, TreeSampler(trees, cpu_after_s=lead_in) as usage, \
            cpu.window(after_s=lead_in) as exact, sampler:
        window_start_ns = time.monotonic_ns() + int(lead_in * 1e9)
        window = run_window(engine, replace(spec, lead_in_s=lead_in), cell.duration_seconds, run.raw_dir, stem, config,
                            run.places)
        window_end_ns = time.monotonic_ns()
    outcome = window.outcome
    record = None
    if before is not None:
        record = windowcheck.judge_window(
            cell.workload, cell.parameter, before, accounting.read_counts(db), pattern=run.object_pattern,
            nested=run.nested_patterns,
            answered_2xx=outcome.answered_2xx + outcome.uncounted_2xx + sampler.answered_2xx,
            unknown=outcome.errors.total + outcome.uncounted_other + sampler.unknown, in_flight=spec.connections + 1)
    run.count(outcome)
    run.answered_200 += sampler.answered_2xx  # the sampler's transactions reach the database too
    run.unknown_outcome += sampler.unknown
    if tx_before is not None:
        run.tx_changes = txcheck.add(run.tx_changes, tx_before, txcheck.snapshot(db))  # type: ignore[arg-type]
    stack_usage, db_usage = usage.usage.get("stack"), usage.usage.get("db")
    checks_total, checks_failed, check_failure = sampler.judge()
    offered, dropped = window.dropped(spec, cell.duration_seconds)
    speed = cpu.probe.reading(window_start_ns, window_end_ns) if cpu.probe is not None else None
    repetition = Repetition(
        index=index, round=round_index, requests=outcome.requests, duration_seconds=outcome.duration_seconds,
        rps=outcome.rps, requests_per_second_all=outcome.requests_per_second_all, latency=outcome.latency,
        errors=outcome.errors, status_codes=outcome.status_codes,
        stack_cpu_seconds=exact.get("stack", stack_usage.cpu_seconds if stack_usage else None),
        db_cpu_seconds=exact.get("db", db_usage.cpu_seconds if db_usage else None),
        proxy_cpu_seconds=exact.get("proxy"),
        pgarena_cpu_seconds=round(window_cpu_seconds(own.samples, window.raw_output, outcome.duration_seconds,
                                                     own.total()), 4),
        stack_rss_peak_bytes=stack_usage.rss_peak_bytes if stack_usage else None,
        stack_pss_peak_bytes=stack_usage.pss_peak_bytes if stack_usage else None,
        generator_cpu_seconds=window.generator_cpu_seconds,
        raw_output=str(window.raw_output.relative_to(run.run_dir)),
        offered_requests=offered, dropped=dropped,
        checks_total=checks_total, checks_failed=checks_failed, check_failure=check_failure,
        accounting=record, generators=window.generators,
        reference_unit_ns=speed.unit_ns if speed else None, reference_samples=speed.samples if speed else 0,
        rewarm_seconds=rewarm_s if round_index is not None else None,
        reference_gap_before_ns=gap_before.unit_ns if gap_before and round_index is not None else None,
    )
    cell.repetitions.append(repetition)
    if cpu.probe is not None and round_index is not None:  # the interleaved schedule's gaps (a sequential warm-up
        # is not marked as load, so no gap is opened after a sequential window)
        def after(gap: ProbeReading) -> None:
            repetition.reference_gap_after_ns = gap.unit_ns
        cpu.probe.load_ended(window_end_ns, after=after)
    return repetition


def repetition_line(rep: Repetition, rps: list[float], config: RunConfig) -> str:
    """The log line of one measured window."""
    return (f"  rep {rep.index}: {rep.rps:,.0f} 2xx/s, p99 {rep.latency.p99_ms:.1f} ms, {rep.errors.total} failed"
            + (f", {rep.dropped} dropped" if rep.offered_requests is not None else "")
            + (f", {rep.checks_failed}/{rep.checks_total} checks failed" if rep.checks_total else "")
            + (f", window accounting {rep.accounting.verdict.symbol}" if rep.accounting else "")
            + (f" — ±{relative_half_width(rps, config.confidence_level):.1%}" if len(rps) > 1 else ""))


def finish_cell(run: CellRun, db: Database, log: Callable[[str], None],
                tx_before: txcheck.TxSnapshot | None = None) -> None:
    """After a cell's last window: its window-accounting verdict (a ❌ window flags it `queries-wrong`) and,
    for tx, the TPC-B invariants over its windows (or since `tx_before`, for back-to-back windows); a
    broken invariant fails the cell."""
    cell = run.cell
    cell.window_accounting, cell.window_accounting_reason = windowcheck.cell_verdict(
        [r.accounting for r in cell.repetitions])
    if cell.window_accounting is Verdict.WRONG and QUERIES_WRONG not in cell.flags:
        cell.flags.append(QUERIES_WRONG)
        log(f"  window accounting ❌ {cell.window_accounting_reason}")
    if run.tx_changes is None:
        return
    if tx_before is not None:
        run.tx_changes = txcheck.add(run.tx_changes, tx_before, txcheck.snapshot(db))
    cell.tx_invariants = txcheck.check(txcheck.ZERO, run.tx_changes, run.answered_200, run.unknown_outcome)
    inv = cell.tx_invariants
    if not inv.holds:
        cell.flags.append("invariants-broken")
        cell.status, cell.error = "failed", f"TPC-B invariants broken: {inv.problem}"
    log(f"  TPC-B invariants {'hold' if inv.holds else 'BROKEN'}: {inv.history_rows_added} history rows for "
        f"{run.answered_200} answers of 200"
        + (f" and {inv.unknown_outcome} of unknown outcome ({inv.unknown_committed} committed)" if inv.unknown_outcome else "")
        + ("" if inv.holds else f" — {inv.problem}"))


def measure_cell(cell: Cell, *, engine: Engine, config: RunConfig, db: Database, server: ServerProcess,
                 base_url: str, run_dir: Path, routes: dict[str, str], log: Callable[[str], None],
                 cpu: CpuMeters | None = None, on_repetition: Callable[[int, float], None] | None = None,
                 variants_cache: dict | None = None, on_warmed: Callable[[], None] | None = None,
                 known_wrong: Sequence[str] = (), places: Sequence[GeneratorPlace] = (),
                 answer: AnswerShape | None = None) -> None:
    """Warm-up and back-to-back repetitions of one cell (the sequential schedule); fills cell.repetitions
    (and, for tx, its invariants).

    Before the warm-up the cell's variants are prepared and checked (variants.py); their expected answers
    are kept in `variants_cache` (if given) for the next cell of the same workload and parameter.
    Repetitions stop once at least `config.repetitions` were measured and the RPS t-interval is within
    ±`config.target_rel_half_width` (stats.should_stop), or at `config.max_repetitions`, or when another
    window would take the measured time past `config.cell_budget_s`.
    """
    run = start_cell(cell, engine=engine, config=config, db=db, base_url=base_url, run_dir=run_dir, routes=routes,
                     log=log, variants_cache=variants_cache, known_wrong=known_wrong, places=places,
                     answer=answer)
    cpu = cpu or CpuMeters({})
    tx_before = txcheck.snapshot(db) if run.tx_changes is not None else None
    cell.warmup = warm_until_steady(run, engine=engine, config=config, minimum_s=cell.warmup_seconds)
    if on_warmed is not None:
        on_warmed()
    measured_s = 0.0
    while True:
        rep = measure_repetition(run, engine=engine, config=config, db=db, server=server, base_url=base_url,
                                 routes=routes, cpu=cpu)
        measured_s += rep.duration_seconds
        rps = [r.rps for r in cell.repetitions]
        if on_repetition is not None:
            on_repetition(rep.index, rep.rps)
        log(repetition_line(rep, rps, config))
        if not keep_repeating(rps, measured_s, cell.duration_seconds, config):
            break
    finish_cell(run, db, log, tx_before)


SLO_START_FRACTION = 0.5
"""The SLO search starts at half the closed-model peak RPS of the same stack, workload and parameter ..."""
SLO_MAX_FRACTION = 4.0
"""... and never offers more than 4 × that peak."""
SLO_GROWTH = 1.5
SLO_FALLBACK_START_RPS = 50.0
"""Start rate when no closed-model cell measured a peak."""


def search_sustainable(*, stack: str, workload: str, parameter: int | None, peak_rps: float | None, engine: Engine,
                       config: RunConfig, base_url: str, routes: dict[str, str], run_dir: Path,
                       log: Callable[[str], None]) -> SloSearchResult:
    """Max sustainable arrival rate under the config's SLO (slo.search_max_sustainable), open model.

    Each step is one window of `config.duration_s` at one arrival rate with `config.open_connections`
    requests in flight at most; a step passes when its p99 (failed requests counted at the timeout) is
    within the SLO, its failed plus dropped share is within `config.slo_max_error_rate` and no request
    timed out.
    """
    assert config.slo_p99_ms is not None
    raw_dir = run_dir / "raw" / stack
    raw_dir.mkdir(parents=True, exist_ok=True)
    name = wl.PARAMETER_NAMES[workload]
    label = f"{workload_stem(workload, parameter)}-slo"
    base = request_spec(workload, parameter, stack=stack, label=label, raw_dir=raw_dir, base_url=base_url,
                        routes=routes, connections=config.open_connections, config=config)
    target = SloTarget(p99_ms=config.slo_p99_ms, max_error_rate=config.slo_max_error_rate)
    points: list[SloPoint] = []

    def measure(level: float) -> LevelResult:
        spec = replace(base, rate=level)
        window = run_window(engine, spec, config.duration_s, raw_dir, f"{label}-{level:.0f}", config)
        out = window.outcome
        offered, dropped = window.dropped(spec, config.duration_s)
        bad = out.errors.total + dropped
        error_rate = bad / max(offered or 0, out.requests + dropped, 1)
        result = LevelResult(level=level, rps=out.rps, p99_ms=out.latency.p99_ms, error_rate=error_rate,
                             timeouts=out.errors.timeout)
        passed = target.passes(result)
        points.append(SloPoint(level=level, rps=out.rps, latency=out.latency, error_rate=error_rate, dropped=dropped,
                               timeouts=out.errors.timeout, passed=passed))
        bound = "≥ " if "p99_ms" in out.latency.censored else ""
        log(f"  SLO step {len(points)}: {level:,.0f} req/s offered → {out.rps:,.0f} 2xx/s, "
            f"p99 {bound}{out.latency.p99_ms:.1f} ms, {error_rate:.1%} failed/dropped"
            + (f", {out.errors.timeout} timed out" if out.errors.timeout else "") + f" {'✓' if passed else '✗'}")
        return result

    start = peak_rps * SLO_START_FRACTION if peak_rps else SLO_FALLBACK_START_RPS
    maximum = peak_rps * SLO_MAX_FRACTION if peak_rps else SLO_FALLBACK_START_RPS * 2**10
    record = SloSearchResult(
        stack=stack, workload=workload, parameter_name=name, parameter=parameter, model="open",
        slo_p99_ms=target.p99_ms, slo_max_error_rate=target.max_error_rate, window_seconds=config.duration_s,
        curve=[], answer_level=None, answer_rps=None, bracket_low=0.0, bracket_high=None, stop_reason="error",
        engine=engine.name)
    try:
        found = search_max_sustainable(measure, start=start, max_level=maximum, target=target,
                                       budget_steps=config.slo_budget_steps, growth=SLO_GROWTH)
    except EngineOutputError as exc:
        record.curve, record.error = points, str(exc)
        return record
    low, high = found.bracket
    record.curve = points
    record.answer_level, record.answer_rps = found.answer_level, found.answer_rps
    record.bracket_low, record.bracket_high = low, (high if high != float("inf") else None)
    record.stop_reason = found.stop_reason
    return record
