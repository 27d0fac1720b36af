"""One cell measured: warm-up, repetitions with resource sampling and answer checks, tx invariants,
and the cell's summary and flags (median and range over the repetitions, docs/methodology.md)."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from pgarena import txcheck
from pgarena import workloads as wl
from pgarena.checks import AnswerSampler
from pgarena.config import RunConfig
from pgarena.engines import Engine, LoadOutcome, LoadSpec
from pgarena.engines.base import EngineOutputError
from pgarena.flags import CHECKS_FAILED, DROPPED, FAILURES, NOISY, saturation_flags
from pgarena.postgres import Database
from pgarena.process import NotReady, ServerProcess, run_measured
from pgarena.resources import CpuMeters, TreeSampler
from pgarena.results import Cell, CellSummary, Interval, Repetition, SloPoint, SloSearchResult
from pgarena.slo import LevelResult, SloTarget, search_max_sustainable
from pgarena.warmup import WindowResult, warm_up
from pgarena.stats import confidence_interval, interval_too_wide, relative_half_width, should_stop, spread

MAX_FAILURE_RATE = 0.01
"""A cell with more failed requests (or, open model, dropped ones) than this is flagged invalid (BRIEF.md)."""
INTERVAL_METHOD = "Student t-interval on the mean of the per-repetition values"


def keep_repeating(rps: list[float], measured_s: float, window_s: float, config: RunConfig) -> bool:
    """Whether a cell measures another repetition: below the minimum always; then only while the RPS
    interval is wider than the target, the cap is not reached and another window fits the time budget."""
    if len(rps) < config.repetitions:
        return True
    if should_stop(rps, target_rel_half_width=config.target_rel_half_width, level=config.confidence_level,
                   min_repetitions=config.repetitions):
        return False
    return len(rps) < config.max_repetitions and measured_s + window_s <= config.cell_budget_s


def stop_reason(repetitions: int, noisy: bool, config: RunConfig) -> str:
    """Why a cell's repetitions stopped, read back from their count, the interval and the config."""
    if config.max_repetitions == config.repetitions:
        return "fixed"
    if repetitions >= config.repetitions and not noisy:
        return "interval"
    return "max-repetitions" if repetitions >= config.max_repetitions else "budget"


def rps_interval(values: list[float], level: float) -> Interval | None:
    """The t-interval on one figure's per-repetition values (None with fewer than 2 repetitions)."""
    if len(values) < 2:
        return None
    low, high = confidence_interval(values, level)
    return Interval(mean=(low + high) / 2, low=low, high=high, rel_half_width=relative_half_width(values, level),
                    level=level, method=INTERVAL_METHOD)


def summarize(cell: Cell, config: RunConfig, cpu_accounting: str = "psutil") -> None:
    """Fill the cell's summary and flags from its repetitions."""
    reps = cell.repetitions
    requests = sum(r.requests for r in reps)
    failures = sum(r.errors.total for r in reps)
    timeouts = sum(r.errors.timeout for r in reps)

    def total(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]

    def per_request_us(value: float | None) -> float | None:
        return value / requests * 1e6 if value is not None and requests else None

    seconds = sum(r.duration_seconds for r in reps)

    def fraction(value: float | None, cpus: int) -> float | None:
        return value / (seconds * cpus) if value is not None and seconds else None

    stack_cpu = total([r.stack_cpu_seconds for r in reps])
    db_cpu = total([r.db_cpu_seconds for r in reps])
    generator_cpu = sum(r.generator_cpu_seconds for r in reps)
    rss = [r.stack_rss_peak_bytes for r in reps if r.stack_rss_peak_bytes is not None]
    pss = [r.stack_pss_peak_bytes for r in reps if r.stack_pss_peak_bytes is not None]
    rps = [r.rps for r in reps]
    noisy = interval_too_wide(rps, target_rel_half_width=config.target_rel_half_width, level=config.confidence_level)
    offered = total([r.offered_requests for r in reps]) if cell.model == "open" else None
    per_rep_cost = [((r.stack_cpu_seconds or 0) + (r.db_cpu_seconds or 0)) / r.requests * 1e6 for r in reps
                    if r.requests and r.stack_cpu_seconds is not None and r.db_cpu_seconds is not None]
    cell.summary = CellSummary(
        rps=spread(rps),
        rps_interval=rps_interval(rps, config.confidence_level),
        stop_reason=stop_reason(len(rps), noisy, config),  # type: ignore[arg-type]
        noisy=noisy,
        latency_avg_ms=spread([r.latency.avg_ms for r in reps]),
        latency_p99_ms=spread([r.latency.p99_ms for r in reps]),
        requests_total=requests,
        failures_total=failures,
        failure_rate=failures / requests if requests else 1.0,
        stack_cpu_us_per_request=per_request_us(stack_cpu),
        db_cpu_us_per_request=per_request_us(db_cpu),
        stack_rss_peak_bytes=max(rss) if rss else None,
        stack_pss_peak_bytes=max(pss) if pss else None,
        generator_cpu_fraction=fraction(generator_cpu, len(config.generator_cpus)),
        generator_cpu_us_per_request=per_request_us(generator_cpu),
        stack_cpu_fraction=fraction(stack_cpu, len(config.server_cpus)),
        db_cpu_fraction=fraction(db_cpu, len(config.server_cpus)),
        cpu_accounting=cpu_accounting,
        cpu_us_per_request_interval=rps_interval(per_rep_cost, config.confidence_level)
        if len(per_rep_cost) == len(reps) else None,
        timeouts_total=timeouts,
        offered_total=int(offered) if offered is not None else None,
        dropped_total=sum(r.dropped for r in reps),
    )
    summary = cell.summary
    flags = []
    if summary.failure_rate > MAX_FAILURE_RATE:
        flags.append(FAILURES)
    if noisy:
        flags.append(NOISY)
    if summary.offered_total and summary.dropped_total / summary.offered_total > MAX_FAILURE_RATE:
        flags.append(DROPPED)
    flags += saturation_flags(summary.generator_cpu_fraction, summary.db_cpu_fraction, summary.stack_cpu_fraction,
                              timeouts)
    checks_total = sum(r.checks_total for r in reps)
    if checks_total and sum(r.checks_failed for r in reps) / checks_total > MAX_FAILURE_RATE:
        flags.append(CHECKS_FAILED)
    cell.flags = sorted(set(cell.flags) | set(flags))


def _workload_stem(workload: str, parameter: int | None) -> str:
    """'perf-test-rows100', 'static': the start of every raw-output file name."""
    return workload if parameter is None else f"{workload}-{wl.PARAMETER_NAMES[workload]}{parameter}"


def cell_label(cell: Cell) -> str:
    """File-name stem of a cell's raw outputs."""
    level = f"vus{cell.vus}" if cell.model == "closed" else f"rate{cell.arrival_rate:.0f}"
    return f"{_workload_stem(cell.workload, cell.parameter)}-{level}"


def load_spec(cell_workload: str, parameter: int | None, *, base_url: str, routes: dict[str, str],
              connections: int, config: RunConfig, rate: float | None = None,
              bodies_file: Path | None = None) -> LoadSpec:
    """The generator's request shape for a workload and parameter (duration set per window)."""
    request = wl.load_request(cell_workload, parameter)
    return LoadSpec(url=base_url + wl.routed(request.path, routes), method=request.method, connections=connections,
                    duration_s=0, timeout_s=config.http_timeout_s, body=request.body,
                    content_type=request.content_type, bodies_file=bodies_file,
                    expected_rows=wl.expected_rows(cell_workload, parameter), workload=cell_workload, rate=rate)


def write_tx_bodies(raw_dir: Path, stack: str, label: str) -> Path:
    """A file of random TPC-B transactions, one per line, seeded by stack and cell (repeatable)."""
    path = raw_dir / f"{label}.bodies"
    seed = zlib.crc32(f"{stack}/{label}".encode())
    path.write_bytes(b"\n".join(wl.random_tx_bodies(wl.TX_BODIES_PER_FILE, seed)) + b"\n")
    return path


@dataclass(frozen=True)
class Window:
    """One generator run: its outcome, the generator's CPU seconds and its raw output file."""

    outcome: LoadOutcome
    generator_cpu_seconds: float
    raw_output: Path

    def dropped(self, spec: LoadSpec, nominal_s: float) -> tuple[int | None, int]:
        """(offered, dropped) of an open-model window; (None, 0) in the closed model."""
        if spec.rate is None:
            return None, 0
        offered = round(spec.rate * nominal_s)
        reported = self.outcome.dropped
        return offered, reported if reported is not None else max(0, offered - self.outcome.requests)


def window_result(window: Window) -> WindowResult:
    """A generator window as the warm-up reads it."""
    return WindowResult(rps=window.outcome.rps, duration_s=window.outcome.duration_seconds,
                        answered_2xx=window.outcome.answered_2xx)


def run_window(engine: Engine, spec: LoadSpec, duration_s: float, raw_dir: Path, stem: str,
               config: RunConfig) -> Window:
    """Run the generator once, pinned to the generator CPUs and bounded in time; parse its output."""
    argv = engine.command(replace(spec, duration_s=duration_s), raw_dir, stem)
    code, generator_cpu = run_measured(argv, stdout_path=raw_dir / f"{stem}.stdout",
                                       stderr_path=raw_dir / f"{stem}.stderr", cpus=config.generator_cpus,
                                       timeout_s=duration_s + 2 * config.http_timeout_s + 60)
    try:
        outcome = engine.parse(raw_dir, stem)
    except EngineOutputError as exc:
        raise EngineOutputError(f"{exc} (exit code {code}; see {raw_dir / (stem + '.stderr')})") from None
    return Window(outcome, generator_cpu, engine.raw_output(raw_dir, stem))


def measure_cell(cell: Cell, *, engine: Engine, config: RunConfig, db: Database, server: ServerProcess,
                 base_url: str, run_dir: Path, routes: dict[str, str], log: Callable[[str], None],
                 cpu: CpuMeters | None = None, on_repetition: Callable[[int, float], None] | None = None,
                 on_warmed: Callable[[], None] | None = None) -> None:
    """Warm-up and repetitions of one cell; fills cell.repetitions (and, for tx, its invariants).

    Repetitions stop once at least `config.repetitions` were measured and the RPS t-interval is within
    ±`config.target_rel_half_width` (stats.should_stop), or at `config.max_repetitions`, or when another
    window would take the measured time past `config.cell_budget_s`.
    """
    raw_dir = run_dir / "raw" / cell.stack
    raw_dir.mkdir(parents=True, exist_ok=True)
    label = cell_label(cell)
    bodies_file = write_tx_bodies(raw_dir, cell.stack, label) if cell.workload == wl.TX else None
    spec = load_spec(cell.workload, cell.parameter, base_url=base_url, routes=routes, connections=cell.vus,
                     config=config, rate=cell.arrival_rate if cell.model == "open" else None, bodies_file=bodies_file)
    cpu = cpu or CpuMeters({})

    tx_before = txcheck.snapshot(db) if cell.workload == wl.TX else None
    answered_200 = 0
    warmed = warm_up(lambda seconds: window_result(run_window(engine, spec, seconds, raw_dir, f"{label}-warmup",
                                                              config)),
                     minimum_s=cell.warmup_seconds, cap_s=config.warmup_cap_s)
    cell.warmup = warmed.record
    answered_200 += warmed.answered_2xx
    if on_warmed is not None:
        on_warmed()
    sample = spec.expected_rows is not None and not engine.checks_answers
    measured_s = 0.0
    index = 0
    while True:
        index += 1
        if server.exit_code() is not None:
            raise NotReady(f"the stack exited (code {server.exit_code()}) during the cell")
        stem = f"{label}-rep{index}"
        sampler = AnswerSampler(base_url, wl.load_request(cell.workload, cell.parameter), cell.workload,
                                spec.expected_rows or 0, config.http_timeout_s, routes) if sample else nullcontext()
        with TreeSampler({"stack": server.pid, "db": db.postmaster_pid}) as usage, cpu.window() as exact, sampler:
            window = run_window(engine, spec, cell.duration_seconds, raw_dir, stem, config)
        outcome = window.outcome
        answered_200 += outcome.answered_2xx
        measured_s += outcome.duration_seconds
        stack_usage, db_usage = usage.usage.get("stack"), usage.usage.get("db")
        checks_total, checks_failed = (sampler.total, sampler.failed) if sample else (  # type: ignore[union-attr]
            outcome.checks_total, outcome.checks_failed)
        offered, dropped = window.dropped(spec, cell.duration_seconds)
        cell.repetitions.append(Repetition(
            index=index, requests=outcome.requests, duration_seconds=outcome.duration_seconds, rps=outcome.rps,
            latency=outcome.latency, errors=outcome.errors, status_codes=outcome.status_codes,
            stack_cpu_seconds=exact.get("stack", stack_usage.cpu_seconds if stack_usage else None),
            db_cpu_seconds=exact.get("db", db_usage.cpu_seconds if db_usage else None),
            stack_rss_peak_bytes=stack_usage.rss_peak_bytes if stack_usage else None,
            stack_pss_peak_bytes=stack_usage.pss_peak_bytes if stack_usage else None,
            generator_cpu_seconds=window.generator_cpu_seconds,
            raw_output=str(window.raw_output.relative_to(run_dir)),
            offered_requests=offered, dropped=dropped,
            checks_total=checks_total, checks_failed=checks_failed,
        ))
        rps = [r.rps for r in cell.repetitions]
        if on_repetition is not None:
            on_repetition(index, outcome.rps)
        log(f"  rep {index}: {outcome.rps:,.0f} req/s, p99 {outcome.latency.p99_ms:.1f} ms, "
            f"{outcome.errors.total} failed" + (f", {dropped} dropped" if offered is not None else "")
            + (f", {checks_failed}/{checks_total} checks failed" if checks_total else "")
            + (f" — ±{relative_half_width(rps, config.confidence_level):.1%}" if len(rps) > 1 else ""))
        if not keep_repeating(rps, measured_s, cell.duration_seconds, config):
            break
    if tx_before is not None:
        cell.tx_invariants = txcheck.check(tx_before, txcheck.snapshot(db), answered_200)
        if not cell.tx_invariants.holds:
            cell.flags.append("invariants-broken")
            cell.status, cell.error = "failed", f"TPC-B invariants broken: {cell.tx_invariants.problem}"
        log(f"  TPC-B invariants {'hold' if cell.tx_invariants.holds else 'BROKEN'}: "
            f"{cell.tx_invariants.history_rows_added} history rows for {answered_200} answers of 200"
            + ("" if cell.tx_invariants.holds else f" — {cell.tx_invariants.problem}"))


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
    requests in flight at most; a step passes when its p99 is within the SLO and its failed plus dropped
    share is within `config.slo_max_error_rate`.
    """
    assert config.slo_p99_ms is not None
    raw_dir = run_dir / "raw" / stack
    raw_dir.mkdir(parents=True, exist_ok=True)
    name = wl.PARAMETER_NAMES[workload]
    label = f"{_workload_stem(workload, parameter)}-slo"
    bodies = write_tx_bodies(raw_dir, stack, label) if workload == wl.TX else None
    base = load_spec(workload, parameter, base_url=base_url, routes=routes, connections=config.open_connections,
                     config=config, bodies_file=bodies)
    target = SloTarget(p99_ms=config.slo_p99_ms, max_error_rate=config.slo_max_error_rate)
    points: list[SloPoint] = []

    def measure(level: float) -> LevelResult:
        spec = replace(base, rate=level)
        window = run_window(engine, spec, config.duration_s, raw_dir, f"{label}-{level:.0f}", config)
        out = window.outcome
        offered, dropped = window.dropped(spec, config.duration_s)
        bad = out.errors.total + dropped
        error_rate = bad / max(offered or 0, out.requests + dropped, 1)
        result = LevelResult(level=level, rps=out.rps, p99_ms=out.latency.p99_ms, error_rate=error_rate)
        passed = target.passes(result)
        points.append(SloPoint(level=level, rps=out.rps, latency=out.latency, error_rate=error_rate, dropped=dropped,
                               passed=passed))
        log(f"  SLO step {len(points)}: {level:,.0f} req/s offered → {out.rps:,.0f} req/s, "
            f"p99 {out.latency.p99_ms:.1f} ms, {error_rate:.1%} failed/dropped {'✓' if passed else '✗'}")
        return result

    start = peak_rps * SLO_START_FRACTION if peak_rps else SLO_FALLBACK_START_RPS
    maximum = peak_rps * SLO_MAX_FRACTION if peak_rps else SLO_FALLBACK_START_RPS * 2**10
    record = SloSearchResult(
        stack=stack, workload=workload, parameter_name=name, parameter=parameter, model="open",
        slo_p99_ms=target.p99_ms, slo_max_error_rate=target.max_error_rate, window_seconds=config.duration_s,
        curve=[], answer_level=None, answer_rps=None, bracket_low=0.0, bracket_high=None, stop_reason="error")
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
