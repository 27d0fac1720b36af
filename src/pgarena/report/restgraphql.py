"""The report's "REST against GraphQL" section (analysis/restgraphql.py): Markdown text and the HTML payload."""

from __future__ import annotations

from pgarena.analysis.restgraphql import (
    SEED_002_PROJECTION,
    RestGraphqlPair,
    change,
    nested_statements,
    rest_graphql_pairs,
)
from pgarena.contract import workloads as wl
from pgarena.report.markup import table
from pgarena.results.models import RunResults

INTRO = (
    "Each row is one stack serving the same data over REST and over GraphQL in the same process, at the same load "
    "level: `GET /api/users?limit=20` against `{ users(limit: 20) { id username fullName } }` (seed 002's query), "
    "and `GET /api/users-posts?limit=20` against `{ users(limit: 20) { id username posts(limit: 5) { id title } } }`. "
    "Req/s, p50 and p99 are geometric means over each cell's windows; **REST vs GraphQL** is their ratio − 1 with "
    "its 95 % interval (Welch's t-interval on the log of each window's figure: the two cells were measured at "
    "different times, not in the same rounds). Seed 002 *projected* "
    f"{SEED_002_PROJECTION['rps'] - 1:+.0%} req/s and {SEED_002_PROJECTION['p99'] - 1:+.0%} p99 for REST direct "
    "execution on FraiseQL, without measuring it; here both sides are measured.")


def _mib(value: int | None) -> str:
    return "not measured" if value is None else f"{value / 2**20:,.0f} MiB"


def _us(value: float | None) -> str:
    return "not measured" if value is None else f"{value:,.0f}"


def _label(pair: RestGraphqlPair) -> str:
    return "users ↔ graphql" if pair.graphql.workload == wl.GRAPHQL else "users-posts ↔ graphql-nested"


def _row(pair: RestGraphqlPair) -> tuple[str, ...]:
    r, g = pair.rest, pair.graphql
    return (pair.stack, _label(pair), f"{pair.vus} ({pair.engine})", f"{r.rps:,.0f}", f"{g.rps:,.0f}",
            change(pair.rps_ratio), f"{r.p50_ms:.2f} / {g.p50_ms:.2f}", f"{r.p99_ms:.2f} / {g.p99_ms:.2f}",
            change(pair.p99_ratio), f"{_us(r.cpu_us_per_request)} / {_us(g.cpu_us_per_request)}",
            f"{_mib(r.rss_peak_bytes)} / {_mib(g.rss_peak_bytes)}")


def flagged_lines(pairs: list[RestGraphqlPair]) -> list[str]:
    """One sentence per stack × workload of the pairs whose answers are flagged inexact (the figures are measured
    like every other; the verification table says what differs)."""
    seen: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
    for pair in pairs:
        for transport, side in (("REST", pair.rest), ("GraphQL", pair.graphql)):
            if side.flags:
                seen[(pair.stack, side.workload)] = (transport, side.flags)
    return [f"{stack} {workload} ({transport}): flagged {', '.join(f'`{f}`' for f in flags)} — measured like "
            "every other cell; its answers differ from the contract's (see Verification), so it is ranked among all "
            "stacks only."
            for (stack, workload), (transport, flags) in seen.items()]


def statements_text(results: RunResults) -> str:
    """Statements per request of the nested list at each probed limit, N+1 flagged."""
    rows = nested_statements(results)
    if not rows:
        return ""
    limits = sorted({limit for _, _, by_limit, _ in rows for limit in by_limit})
    body = [(stack, workload, *(f"{by_limit[limit]:g}" if limit in by_limit else "–" for limit in limits),
             "⚠️ N+1: one query per user" if n_plus_one else "✅ constant")
            for stack, workload, by_limit, n_plus_one in rows]
    return ("Statements per request of the nested list (database accounting, `pg_stat_statements`, at each users "
            "limit of the probe). A count that grows with the limit is N+1 — a resolver that asks for each user's "
            "posts on its own; it is shown, not made invalid (the answers are right, the cost is the stack's own).\n\n"
            + table(["Stack", "Workload", *(f"limit {limit}" for limit in limits), "Batching"], body,
                    "ll" + "r" * len(limits) + "l"))


def section(results: RunResults) -> str:
    """The Markdown section, or '' when no stack has both sides of a pair or no nested accounting."""
    pairs = rest_graphql_pairs(results)
    parts = []
    if pairs:
        parts += [INTRO, table(["Stack", "Pair", "VUs", "REST req/s", "GraphQL req/s", "REST vs GraphQL req/s",
                                "p50 ms REST / GraphQL", "p99 ms REST / GraphQL", "REST vs GraphQL p99",
                                "stack CPU µs/req REST / GraphQL", "peak RSS REST / GraphQL"],
                               [_row(p) for p in pairs], "lllrrrrrrrr")]
        flagged = flagged_lines(pairs)
        if flagged:
            parts.append("\n".join(f"- {line}" for line in flagged))
    statements = statements_text(results)
    if statements:
        parts.append(statements)
    return "\n\n".join(parts)


def payload(results: RunResults) -> dict:
    """The same for the HTML page."""
    pairs = rest_graphql_pairs(results)
    rows = nested_statements(results)
    limits = sorted({limit for _, _, by_limit, _ in rows for limit in by_limit})
    return {
        "intro": INTRO,
        "pairs": [dict(zip(("stack", "pair", "vus", "rest_rps", "graphql_rps", "rps_change", "p50", "p99",
                            "p99_change", "cpu", "rss"), _row(p))) for p in pairs],
        "flagged": flagged_lines(pairs),
        "limits": limits,
        "statements": [{"stack": s, "workload": w, "counts": [by_limit.get(limit) for limit in limits],
                        "n_plus_one": n} for s, w, by_limit, n in rows],
    }
