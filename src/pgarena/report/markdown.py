"""The Markdown report: seed-000-style tables per (workload parameter × load level), sorted by RPS, the
verification matrix, stacks and environment. Plain text that pastes into a blog post or a PR comment.

This module is the report's frame (its introduction and the order of its sections); the sections are in
markdown_results.py (the tables), markdown_verdicts.py (ratios, schedule, ceiling), markdown_costs.py,
markdown_verification.py and markdown_environment.py, each table cell written by markup.py."""

from __future__ import annotations

from pgarena.report import generators, network, poolsize, resilience, restgraphql, wire
from pgarena.report import markdown_verdicts as mv
from pgarena.report import targets as remote
from pgarena.report.conditions import not_measured_sentence
from pgarena.report.markdown_costs import cold_start_section, cost_section, slo_section, work_cost_section
from pgarena.report.markdown_environment import environment_section, stacks_section
from pgarena.report.markdown_results import results_tables
from pgarena.report.markdown_verification import verification_section
from pgarena.results.models import RunResults


def render_markdown(results: RunResults) -> str:
    """The whole Markdown report of one run."""
    status = "" if results.status == "complete" else f" — **{results.status}**"
    parts = [
        f"# pgarena {results.kind} {results.run_id}{status}",
        f"Started {results.started_at:%Y-%m-%d %H:%M:%S} UTC. Each table: one workload parameter at one load "
        "level, stacks sorted by median 2xx answers per second (answered work: failed requests are not "
        "throughput; they are in `Failures`). Two ranks side by side: `# exact` among the stacks whose answers "
        "are exact, `# all` among every stack that answered validly — a stack with ❌ columns (`columns-wrong`, "
        "named next to its figure) has only the second. Where the stacks were measured in interleaved rounds, "
        "ranks and the ratios `× best` (and `× <baseline>`) come from each round's ratios, with intervals that "
        "hold jointly at the run's level (\"a is 1.52× b (1.41–1.64)\"; \"equivalent within ±m\" where it lies "
        "within the run's margin m; \"not resolved\" where it holds 1 and reaches beyond the margin); otherwise "
        "ranks come from each cell's own 95 % interval of the mean and the ratios are of medians. `2–3`: the "
        "intervals cannot order these. A `noisy` cell (interval wider than the target: more rounds would "
        "have helped) is still ranked wherever its interval is clear of its neighbours. Invalid cells get `–` "
        "in both ranks. `DB ceiling`: the cell's 2xx/s as a share of what pgbench got from the database alone "
        "running the workload's statements under the cell's conditions (its round trip, min(VUs, pool size) "
        "connections); above 100 % (⚠) is a measurement problem. Open-model tables at a rate shared by every stack "
        "rank p99 latency instead; those at a share of each stack's own peak are not ranked. `Efficiency #` ranks "
        "CPU µs per request (stack + PostgreSQL, lower is better) by independent intervals. Latency is request "
        "latency measured by the load generator; in the open model it counts from each request's scheduled start "
        "(oha) and requests the generator could not start or finish on schedule are `Dropped`. A request without "
        "an answer (timeout, connection error) counts at the HTTP timeout; a latency it reaches is a lower bound, "
        "printed `≥`. Invalid (never ranked): `failures>1%` / `dropped>1%` / `checks-failed>1%` (the answers "
        "sampled under load: the one-sided exact binomial test rejects \"≤ 1 % wrong\" at level 1 %) / "
        "`invariants-broken` / `queries-wrong` (a cache or an N+1) / `variants-wrong` (a request variant "
        "answered wrongly) / `pool-exceeded` (more connections than the pool size) / `generator-bound` (the generator's CPUs "
        "were >90 % busy over the measured window — the generator, pgarena's own samplers and Toxiproxy together — or the cell's request rate reached 90 % of the generator's "
        "measured headroom — it measured the generator, not the stack). Other flags: `columns-wrong` ranked "
        "among all stacks only, and so are `content-type-wrong` (the right JSON without `Content-Type: "
        "application/json`) and `answer-mapped` (the right values in a shape the stack's stack.toml `[answer]` "
        "declares — an envelope, camelCase keys — undone before judging) and `db-unchecked` (the database could "
        "not be checked — pg_stat_statements unreadable, e.g. `--database-url` without pg_read_all_stats — so "
        "nothing shows the answers came from it) and `pipelines-across-requests` (the wire observer saw statements of "
        "several requests in one flight to PostgreSQL: pipelining or batching across requests); `demonstration` a stack kept to show a "
        "mistake on purpose (stack.toml `competes = false`), shown but never ranked; `noisy`; `database-bound` PostgreSQL used >90 % of the server CPUs while the "
        "stack used <50 %; `timeouts` some requests hit the HTTP timeout. `Variants`: distinct requests the load "
        "drew from; `Window accounting`: did pg_stat_statements see the workload's statements for every "
        "measured window's answers (✅) or not (❌ a cache or an N+1). Method: docs/methodology.md.",
    ]
    if results.error:
        parts.append(f"> Run error: {results.error}")
    if results.schedule is not None and (skipped := not_measured_sentence(results.schedule.phases)):
        parts.append(f"> {skipped}. See Schedule.")
    if remote.warning(results):
        parts.append(f"> **{remote.warning(results)}**")
    graphql = restgraphql.section(results)
    slo, cold, cost = slo_section(results), cold_start_section(results.stacks), cost_section(results)
    work = work_cost_section(results)
    parts += [
        "## Results", results_tables(results),
        "## Schedule", mv.schedule_section(results),
        *(["## Generators", generators.section(results)] if generators.section(results) else []),
        "## Database ceiling", mv.ceiling_section(results),
        *(["## Cost per request", cost] if cost else []),
        *(["## What each kind of work costs (relative to the stack's own perf-minimal)", work] if work else []),
        *(["## Max sustainable throughput under the SLO", slo] if slo else []),
        *(["## REST against GraphQL on the same stack", graphql] if graphql else []),
        *(["## Throughput by database round trip", network.rtt_section(results)] if network.rtt_section(results) else []),
        *(["## Throughput by pool size", poolsize.section(results)] if poolsize.section(results) else []),
        *(["## Resilience: faults under load", resilience.section(results)] if results.resilience else []),
        *(["## Cold start", cold] if cold else []),
        "## Verification", verification_section(results),
        *(["## On the wire", wire.section(results)] if wire.section(results) else []),
        "## Stacks", stacks_section(results.stacks),
        "## Environment", environment_section(results),
    ]
    return "\n\n".join(parts) + "\n"
