"""A cell summarized from its repetitions, and when a cell stops repeating."""

from __future__ import annotations

import statistics

from pgarena.config.run import RunConfig
from pgarena.contract.flags import (
    CHECKS_FAILED,
    DATABASE_BOUND,
    DB_UNCHECKED,
    DROPPED,
    FAILURES,
    GENERATOR_BOUND,
    NOISY,
    TIMEOUTS,
    saturation_flags,
)
from pgarena.results.models import Cell, CellSummary, Interval, Repetition, Spread
from pgarena.stats.binomial import rate_exceeds
from pgarena.stats.intervals import confidence_interval, interval_too_wide, relative_half_width, should_stop

SUMMARY_FLAGS = (FAILURES, NOISY, DROPPED, CHECKS_FAILED, GENERATOR_BOUND, DATABASE_BOUND, TIMEOUTS, DB_UNCHECKED)
"""The flags `summarize` derives from the repetitions."""
MAX_FAILURE_RATE = 0.01
"""A cell with more failed requests (or, open model, dropped ones) than this is flagged invalid (BRIEF.md)."""
CHECKS_TEST_LEVEL = 0.01
"""checks-failed>1%: a cell is flagged when the one-sided exact binomial test rejects "at most 1 % of the
sampled answers are wrong" at this level, so a stack wrong in exactly 1 % of its answers is invalidated in at
most 1 % of its cells, whatever the sample size (stats/binomial.py)."""
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


def answered_2xx(repetition: Repetition) -> int:
    """2xx answers of one repetition (oha keys statuses by code, k6 as '2xx')."""
    return sum(n for code, n in repetition.status_codes.items() if code.startswith("2"))


def latency_censored(reps: list[Repetition]) -> list[str]:
    """The summary's latency medians that are lower bounds: a repetition whose figure is a lower bound
    (it reaches requests without an answer) and at or below the median could raise the median."""
    marked = []
    for name, summary_name in (("p99_ms", "latency_p99_ms"), ("avg_ms", "latency_avg_ms")):
        median = statistics.median(getattr(r.latency, name) for r in reps)
        if any(name in r.latency.censored and getattr(r.latency, name) <= median for r in reps):
            marked.append(summary_name)
    return marked


def sharers_cpu_seconds(rep: Repetition) -> float:
    """CPU seconds of what shares the generator CPUs with the generator over one window: pgarena's own
    process (its answer sampler, resource samplers, connection poller) and Toxiproxy (--db-rtt / --stack-rtt:
    44–92 µs of CPU per database round trip here), both pinned to those CPUs; 0 where not measured."""
    return (rep.pgarena_cpu_seconds or 0.0) + (rep.proxy_cpu_seconds or 0.0)


def generator_cpu_fraction(reps: list[Repetition], seconds: float, config: RunConfig, *,
                           sharers: bool = False) -> float | None:
    """The generator CPU set's busy share over the windows: the generator's CPU / (seconds × its CPUs) —
    with `sharers`, plus what shares those CPUs (`sharers_cpu_seconds`: pgarena's own process and Toxiproxy
    on this host's generator CPUs). Several generators (Repetition.generators): the busiest CPU set's share,
    where the places of one host pinned to the same CPUs share them (two k6 processes on one core at 50 %
    each make it 100 % busy). A set with a place whose CPU was not measured (another host) is left out; None
    when no set is left."""
    local = ("local", tuple(config.generator_cpus))
    entries: list[tuple[str, tuple[int, ...], float | None]] = []
    for rep in reps:
        places = rep.generators.places if rep.generators else []
        entries += [(place.host, tuple(place.cpus or ()), place.cpu_seconds) for place in places]
        if not places:
            entries.append((*local, rep.generator_cpu_seconds))
        if sharers:
            entries.append((*local, sharers_cpu_seconds(rep)))
    shares = cpu_set_shares(entries, seconds)
    return max(shares.values()) if shares else None


def cpu_set_shares(entries: list[tuple[str, tuple[int, ...], float | None]],
                   seconds: float) -> dict[tuple[str, tuple[int, ...]], float]:
    """(host, CPUs, CPU seconds) entries grouped by CPU set — entries of one host pinned to the same CPUs share
    them — as each set's busy share: its CPU seconds / (`seconds` × its CPUs). A set with an entry whose CPU
    was not measured (None: another host) or without CPUs is left out."""
    groups: dict[tuple[str, tuple[int, ...]], list[float | None]] = {}
    for host, cpus, cpu_seconds in entries:
        groups.setdefault((host, cpus), []).append(cpu_seconds)
    return {key: sum(values) / (seconds * len(key[1]))  # type: ignore[arg-type]
            for key, values in groups.items() if key[1] and seconds and None not in values}


def summarize(cell: Cell, config: RunConfig, cpu_accounting: str = "psutil",
              headroom_rps: float | None = None) -> None:
    """Fill the cell's summary and flags from its repetitions. `rps` is answered work (2xx answers per
    second); CPU per request is per 2xx answer; `headroom_rps` (the generator's measured headroom) marks
    cells whose request rate reached it `generator-bound`."""
    reps = cell.repetitions
    requests = sum(r.requests for r in reps)
    answered = sum(answered_2xx(r) for r in reps)
    failures = sum(r.errors.total for r in reps)
    timeouts = sum(r.errors.timeout for r in reps)

    def total(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]

    def per_request_us(value: float | None, count: int) -> float | None:
        return value / count * 1e6 if value is not None and count else None

    seconds = sum(r.duration_seconds for r in reps)

    def fraction(value: float | None, cpus: int) -> float | None:
        return value / (seconds * cpus) if value is not None and seconds else None

    stack_cpu = total([r.stack_cpu_seconds for r in reps])
    db_cpu = total([r.db_cpu_seconds for r in reps])
    generator_cpu = total([r.generator_cpu_seconds for r in reps])
    rss = [r.stack_rss_peak_bytes for r in reps if r.stack_rss_peak_bytes is not None]
    pss = [r.stack_pss_peak_bytes for r in reps if r.stack_pss_peak_bytes is not None]
    rps = [r.rps for r in reps]
    every = [r.requests_per_second_all if r.requests_per_second_all is not None else r.requests / r.duration_seconds
             for r in reps if r.duration_seconds]
    noisy = interval_too_wide(rps, target_rel_half_width=config.target_rel_half_width, level=config.confidence_level)
    offered = total([r.offered_requests for r in reps]) if cell.model == "open" else None
    per_rep_cost = [((r.stack_cpu_seconds or 0) + (r.db_cpu_seconds or 0)) / answered_2xx(r) * 1e6 for r in reps
                    if answered_2xx(r) and r.stack_cpu_seconds is not None and r.db_cpu_seconds is not None]
    cell.summary = CellSummary(
        rps=Spread.of(rps),
        rps_interval=rps_interval(rps, config.confidence_level),
        requests_per_second_all=Spread.of(every) if every else None,
        stop_reason=stop_reason(len(rps), noisy, config),  # type: ignore[arg-type]
        noisy=noisy,
        latency_avg_ms=Spread.of([r.latency.avg_ms for r in reps]),
        latency_p99_ms=Spread.of([r.latency.p99_ms for r in reps]),
        latency_censored=latency_censored(reps),
        requests_total=requests,
        failures_total=failures,
        failure_rate=failures / requests if requests else 1.0,
        stack_cpu_us_per_request=per_request_us(stack_cpu, answered),
        db_cpu_us_per_request=per_request_us(db_cpu, answered),
        stack_rss_peak_bytes=max(rss) if rss else None,
        stack_pss_peak_bytes=max(pss) if pss else None,
        generator_cpu_fraction=generator_cpu_fraction(reps, seconds, config),
        generator_set_cpu_fraction=generator_cpu_fraction(reps, seconds, config, sharers=True),
        generator_cpu_us_per_request=per_request_us(generator_cpu, requests),
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
    # NOTE: the generator-bound test judges the generator CPU set as a whole: pgarena's samplers and Toxiproxy
    # run there too, so a stack that makes more round trips (more proxy CPU) starves the generator more.
    flags += saturation_flags(summary.generator_set_cpu_fraction, summary.db_cpu_fraction, summary.stack_cpu_fraction,
                              timeouts, headroom_rps=headroom_rps,
                              requests_per_second=summary.requests_per_second_all.median
                              if summary.requests_per_second_all else None)
    # NOTE: the sampled answers are few (tens to hundreds per cell), so "> 1 %" is the exact binomial test
    # (stats/binomial.py), not the observed share: an honest 0.5 % stack must not be invalidated by chance
    if rate_exceeds(sum(r.checks_failed for r in reps), sum(r.checks_total for r in reps), MAX_FAILURE_RATE,
                    CHECKS_TEST_LEVEL):
        flags.append(CHECKS_FAILED)
    if cell.window_accounting_unavailable:  # the database could not be checked: never ranked as if it had been
        flags.append(DB_UNCHECKED)
    # NOTE: these flags are re-derived from all repetitions on every call (an interleaved cell is summarized
    # after each window), so one that no longer holds is dropped; flags set elsewhere are kept.
    cell.flags = sorted((set(cell.flags) - set(SUMMARY_FLAGS)) | set(flags))
