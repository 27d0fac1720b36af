"""One cell measured: warm-up, repetitions with resource sampling and answer checks, tx invariants,
and the cell's summary and flags (median and range over the repetitions, docs/methodology.md)."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from pgarena import txcheck
from pgarena import workloads as wl
from pgarena.checks import AnswerSampler
from pgarena.config import RunConfig
from pgarena.engines import Engine, LoadOutcome, LoadSpec
from pgarena.engines.base import EngineOutputError
from pgarena.flags import saturation_flags
from pgarena.postgres import Database
from pgarena.process import NotReady, ServerProcess, run_measured
from pgarena.resources import TreeSampler
from pgarena.results import Cell, CellSummary, Repetition
from pgarena.stats import DEFAULT_NOISY_REL_SPREAD, spread

MAX_FAILURE_RATE = 0.01
"""A cell with more failed requests than this is flagged invalid (BRIEF.md)."""


def summarize(cell: Cell, config: RunConfig) -> None:
    """Fill the cell's summary and flags from its repetitions."""
    reps = cell.repetitions
    requests = sum(r.requests for r in reps)
    failures = sum(r.errors.total for r in reps)

    def per_request_us(values: list[float | None]) -> float | None:
        if any(v is None for v in values) or not requests:
            return None
        return sum(values) / requests * 1e6  # type: ignore[arg-type]

    window = sum(r.duration_seconds for r in reps) * len(config.generator_cpus)
    rss = [r.stack_rss_peak_bytes for r in reps if r.stack_rss_peak_bytes is not None]
    cell.summary = CellSummary(
        rps=spread([r.rps for r in reps]),
        latency_avg_ms=spread([r.latency.avg_ms for r in reps]),
        latency_p99_ms=spread([r.latency.p99_ms for r in reps]),
        requests_total=requests,
        failures_total=failures,
        failure_rate=failures / requests if requests else 1.0,
        stack_cpu_us_per_request=per_request_us([r.stack_cpu_seconds for r in reps]),
        db_cpu_us_per_request=per_request_us([r.db_cpu_seconds for r in reps]),
        stack_rss_peak_bytes=max(rss) if rss else None,
        generator_cpu_fraction=sum(r.generator_cpu_seconds for r in reps) / window if window else None,
        generator_cpu_us_per_request=per_request_us([r.generator_cpu_seconds for r in reps]),
    )
    flags = []
    if cell.summary.failure_rate > MAX_FAILURE_RATE:
        flags.append("failures>1%")
    if len(reps) > 1 and cell.summary.rps.rel_spread > DEFAULT_NOISY_REL_SPREAD:
        flags.append("noisy")
    flags += saturation_flags(cell.summary.generator_cpu_fraction, None, None, sum(r.errors.timeout for r in reps))
    checks_total = sum(r.checks_total for r in reps)
    if checks_total and sum(r.checks_failed for r in reps) / checks_total > MAX_FAILURE_RATE:
        flags.append("checks-failed>1%")
    cell.flags = sorted(set(cell.flags) | set(flags))


def measure_cell(cell: Cell, *, engine: Engine, config: RunConfig, db: Database, server: ServerProcess,
                 base_url: str, run_dir: Path, routes: dict[str, str], log: Callable[[str], None]) -> None:
    """Warm-up and repetitions of one cell; fills cell.repetitions (and, for tx, its invariants)."""
    request = wl.load_request(cell.workload, cell.parameter)
    raw_dir = run_dir / "raw" / cell.stack
    raw_dir.mkdir(parents=True, exist_ok=True)
    label = f"{cell.workload}{'' if cell.parameter is None else f'-{cell.parameter_name}{cell.parameter}'}-vus{cell.vus}"
    bodies_file = None
    if cell.workload == wl.TX:
        bodies_file = raw_dir / f"{label}.bodies"
        seed = zlib.crc32(f"{cell.stack}/{label}".encode())
        bodies_file.write_bytes(b"\n".join(wl.random_tx_bodies(wl.TX_BODIES_PER_FILE, seed)) + b"\n")
    expected_rows = wl.expected_rows(cell.workload, cell.parameter)
    spec = LoadSpec(url=base_url + wl.routed(request.path, routes), method=request.method, connections=cell.vus, duration_s=0,
                    timeout_s=config.http_timeout_s, body=request.body, content_type=request.content_type,
                    bodies_file=bodies_file, expected_rows=expected_rows, workload=cell.workload)

    def window(duration_s: float, stem: str) -> tuple[int, float]:
        argv = engine.command(replace(spec, duration_s=duration_s), raw_dir, stem)
        return run_measured(argv, stdout_path=raw_dir / f"{stem}.stdout", stderr_path=raw_dir / f"{stem}.stderr",
                            cpus=config.generator_cpus,
                            timeout_s=duration_s + 2 * config.http_timeout_s + 60)

    def parse(stem: str, code: int) -> LoadOutcome:
        try:
            return engine.parse(raw_dir, stem)
        except EngineOutputError as exc:
            raise EngineOutputError(f"{exc} (exit code {code}; see {raw_dir / (stem + '.stderr')})") from None

    tx_before = txcheck.snapshot(db) if cell.workload == wl.TX else None
    answered_200 = 0
    stem = f"{label}-warmup"
    code, _ = window(cell.warmup_seconds, stem)
    if tx_before is not None:
        answered_200 += parse(stem, code).answered_2xx
    sample = expected_rows is not None and not engine.checks_answers
    for index in range(1, config.repetitions + 1):
        if server.exit_code() is not None:
            raise NotReady(f"the stack exited (code {server.exit_code()}) during the cell")
        stem = f"{label}-rep{index}"
        sampler = AnswerSampler(base_url, request, cell.workload, expected_rows or 0, config.http_timeout_s,
                                routes) if sample else nullcontext()
        with TreeSampler({"stack": server.pid, "db": db.postmaster_pid}) as usage, sampler:
            code, generator_cpu = window(cell.duration_seconds, stem)
        outcome = parse(stem, code)
        answered_200 += outcome.answered_2xx
        stack_usage = usage.usage.get("stack")
        db_usage = usage.usage.get("db")
        checks_total, checks_failed = (sampler.total, sampler.failed) if sample else (  # type: ignore[union-attr]
            outcome.checks_total, outcome.checks_failed)
        cell.repetitions.append(Repetition(
            index=index, requests=outcome.requests, duration_seconds=outcome.duration_seconds, rps=outcome.rps,
            latency=outcome.latency, errors=outcome.errors, status_codes=outcome.status_codes,
            stack_cpu_seconds=stack_usage.cpu_seconds if stack_usage else None,
            db_cpu_seconds=db_usage.cpu_seconds if db_usage else None,
            stack_rss_peak_bytes=stack_usage.rss_peak_bytes if stack_usage else None,
            generator_cpu_seconds=generator_cpu,
            raw_output=str(engine.raw_output(raw_dir, stem).relative_to(run_dir)),
            checks_total=checks_total, checks_failed=checks_failed,
        ))
        log(f"  rep {index}/{config.repetitions}: {outcome.rps:,.0f} req/s, "
            f"p99 {outcome.latency.p99_ms:.1f} ms, {outcome.errors.total} failed"
            + (f", {checks_failed}/{checks_total} checks failed" if checks_total else ""))
    if tx_before is not None:
        cell.tx_invariants = txcheck.check(tx_before, txcheck.snapshot(db), answered_200)
        if not cell.tx_invariants.holds:
            cell.flags.append("invariants-broken")
            cell.status, cell.error = "failed", f"TPC-B invariants broken: {cell.tx_invariants.problem}"
        log(f"  TPC-B invariants {'hold' if cell.tx_invariants.holds else 'BROKEN'}: "
            f"{cell.tx_invariants.history_rows_added} history rows for {answered_200} answers of 200"
            + ("" if cell.tx_invariants.holds else f" — {cell.tx_invariants.problem}"))
