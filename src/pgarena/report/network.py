"""The report's network parts (--db-rtt): how the stacks reached PostgreSQL, and throughput by round trip."""

from __future__ import annotations

from pgarena.analysis.rtt import rtt_rows
from pgarena.report.markup import table
from pgarena.results.models import RunResults


def topology_text(results: RunResults) -> str:
    """One paragraph: the proxy, its CPUs, and what it added at each configured round trip."""
    n = results.network
    if n is None:
        return ""
    measured = "; ".join(
        f"at {o['configured_rtt_ms']:g} ms +{o['added_median_us']:,.0f} µs median (p99 +{o['added_p99_us']:,.0f} µs), "
        f"{o['cpu_us_per_round_trip']:,.0f} µs of its CPU per round trip" for o in n.overhead)
    return (f"Network: {n.description}. {n.proxy}, pinned to CPU {', '.join(map(str, n.proxy_cpus))} (the generator's; "
            f"its CPU is counted apart, per window). Measured before the stacks started, against the same round "
            f"trips straight to an echo server: {measured or 'not measured'}.")


def placement_text(results: RunResults) -> str:
    """Where the roles ran: each host and address (--netns, --topology), or the loopback."""
    t = results.topology
    if t is None and results.environment.targets:
        return ("generator on this machine; the stacks are remote targets deployed elsewhere (see Targets); "
                "PostgreSQL is the server of --database-url")
    if t is None:
        return "generator, stacks and PostgreSQL on this machine's loopback (no namespaces)"
    where = {"netns": "in {host} ({address})", "ssh": "on {host} ({address})", "local": "on this machine ({address})"}
    roles = ", ".join(f"{role} " + where[place.kind].format(host=place.host, address=place.address)
                      for role, place in t.roles.items())
    head = f"network namespaces, subnet {t.subnet}" if t.mode == "netns" else t.description
    return f"{head}: {roles}. Links: {'; '.join(t.links)}"


def rtt_section(results: RunResults) -> str:
    """Each stack's median 2xx/s at every round trip and its share of the smallest one's."""
    rtts, rows = rtt_rows(results)
    if not rows:
        return ""
    body = []
    for r in rows:
        cells = []
        for rtt in rtts:
            share = r.share(rtt)
            cells.append("–" if share is None else f"{r.rps[rtt]:,.0f} ({share:.2f}×)")
        label = r.workload + (f" {r.parameter}" if r.parameter is not None else "")
        pool = "" if r.pool_size is None else f", pool size {r.pool_size}"
        body.append((r.stack, label, f"{r.vus} ({r.engine}{pool})", *cells))
    return ("Median 2xx/s at each round trip between the stack and PostgreSQL, and in brackets its share of the "
            "stack's own figure at the smallest round trip: how much a network hop costs each stack (drivers that "
            "pipeline, prepare or batch lose less). The paired ratios between stacks at each round trip are in the "
            "results tables above.\n\n"
            + table(["Stack", "Workload", "VUs", *(f"{rtt:g} ms" for rtt in rtts)], body, "lll" + "r" * len(rtts)))
