"""--db-rtt: PostgreSQL a chosen round trip away from every stack, through Toxiproxy.

One Toxiproxy server for the run, pinned to the generator's CPUs (it is part of the network, not of the
stack under test) and measured apart: its CPU per window is `Repetition.proxy_cpu_seconds`, and before any
stack starts pgarena measures what it adds at each configured round trip against the same round trips
straight to an echo server (system/toxiproxy_overhead.measure_overhead). Each stack gets its own proxy to
the database; before a cell's warm-up and before each of its windows the stack's proxy is set to the cell's
round trip (a latency toxic of half the round trip each way), so cells of different round trips can share
one stack process and its pool. pgarena's own connections (verification, accounting, the samplers'
expected answers) go to PostgreSQL directly.

This kernel has no netem qdisc, so Toxiproxy is the only path (`tc qdisc add dev lo root netem` answers
"Specified qdisc kind is unknown"); its latency toxic counts whole milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace

from pgarena.pipeline.context import RunContext, RunError
from pgarena.results.models import NetworkInfo
from pgarena.system import toxiproxy, toxiproxy_install, toxiproxy_overhead

INSTALL_TIMEOUT_S = 900


class DbNetwork:
    """The run's Toxiproxy and one proxy per stack (see the module docstring)."""

    def __init__(self, ctx: RunContext, scope: ExitStack) -> None:
        config = ctx.config
        binary = toxiproxy_install.locate()
        if binary is None:
            ctx.log(f"building Toxiproxy {toxiproxy_install.TOXIPROXY_VERSION} from the Go module proxy "
                    "(once; about 2 min)")
            try:
                binary = toxiproxy_install.install(INSTALL_TIMEOUT_S, tracker=ctx.registry)
            except (toxiproxy_install.ToxiproxyUnavailable, toxiproxy.ToxiproxyError) as exc:
                raise RunError(f"--db-rtt needs Toxiproxy: {exc}") from None
        self.db = ctx.db
        self.stack_rtt_ms = config.stack_rtt_ms
        self.server = scope.enter_context(toxiproxy.Toxiproxy(
            binary, log_path=ctx.run_dir / "logs" / "toxiproxy.log", cpus=config.generator_cpus,
            tracker=ctx.registry, host=ctx.placement.here))  # --netns: on the host link, reachable by every role
        overhead = []
        for rtt in sorted(set(config.db_rtt_ms) | ({config.stack_rtt_ms} if config.stack_rtt_ms else set())):
            measured = toxiproxy_overhead.measure_overhead(self.server, rtt_ms=rtt,
                                                           round_trips=2000 if rtt == 0 else 300)
            overhead.append({k: round(v, 3) if isinstance(v, float) else v for k, v in measured.as_dict().items()})
            ctx.log(f"Toxiproxy at {rtt:g} ms: +{measured.added_median_us:,.0f} µs median per round trip "
                    f"(p99 +{measured.added_p99_us:,.0f} µs), {measured.cpu_us_per_round_trip:,.0f} µs of its CPU each")
        self.info = NetworkInfo(
            mode="toxiproxy", proxy=f"Toxiproxy {self.server.version()}", proxy_cpus=list(config.generator_cpus),
            db_rtt_ms=list(config.db_rtt_ms), overhead=overhead, stack_rtt_ms=config.stack_rtt_ms,
            description=self._describe(config.db_rtt_ms, config.stack_rtt_ms, ctx.placement.here))
        ctx.results.network = self.info

    @staticmethod
    def _describe(db_rtt_ms: list[float], stack_rtt_ms: float, here: str) -> str:
        parts = []
        if db_rtt_ms:
            parts.append("stacks reach PostgreSQL through one Toxiproxy proxy each")
        if stack_rtt_ms:
            parts.append(f"the generator reaches each stack through one Toxiproxy proxy each, {stack_rtt_ms:g} ms "
                         "added to every round trip")
        return (f"{'; '.join(parts)} (Toxiproxy at {here}); a round trip is a latency toxic of half of it each way; "
                "pgarena's own connections (verification, accounting) go direct")

    def front(self, stack_id: str, host: str, port: int) -> toxiproxy.Proxy:
        """--stack-rtt: a new proxy in front of a stack, at the configured generator→stack round trip."""
        proxy = self.server.proxy(f"front-{stack_id}", upstream=f"{host}:{port}")
        proxy.set_rtt(self.stack_rtt_ms)
        return proxy

    def route(self, stack_id: str) -> toxiproxy.Proxy:
        """A new proxy from a free loopback port to the database, for one stack."""
        return self.server.proxy(f"db-{stack_id}", upstream=f"{self.db.host}:{self.db.port}")

    @staticmethod
    def setter(proxy: toxiproxy.Proxy) -> Callable[[float | None], None]:
        """Sets the proxy's round trip when a cell asks for another one than the current."""
        current: list[float | None] = [None]

        def set_rtt(rtt_ms: float | None) -> None:
            wanted = rtt_ms or 0.0
            if current[0] != wanted:
                proxy.set_rtt(wanted)
                current[0] = wanted

        return set_rtt

    def proxied(self, values: dict[str, str], proxy: toxiproxy.Proxy) -> dict[str, str]:
        """A stack's launch values with the database behind `proxy`."""
        url = replace(self.db, host=proxy.host, port=proxy.port).url
        return {**values, "database_url": url, "db_host": proxy.host, "db_port": str(proxy.port)}
