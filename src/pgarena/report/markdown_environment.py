"""The Markdown report's Stacks and Environment sections: each stack's declared facts and what happened to
it, and where and with what the run happened (machine, CPU sets, versions, profile, network, database)."""

from __future__ import annotations

from pgarena.contract.flags import GENERATOR_BOUND_CPU_FRACTION
from pgarena.report import generators, network
from pgarena.report import targets as remote
from pgarena.report.markup import connection_count, milliseconds, number, table, yes_no
from pgarena.report.targets import NOT_MEASURED
from pgarena.results.models import RunResults, StackInfo


def _warmup(s: StackInfo) -> str:
    if s.warmup_seconds is None:
        return "–"
    return f"{s.warmup_seconds:.1f} s" + ("" if s.warmup_steady is not False else " (cap hit)")


def _listening(s: StackInfo) -> str:
    if s.target_url is not None:
        return f"{s.target_url} (remote target)"
    if not s.listen_addresses:
        return "–"
    return ", ".join(s.listen_addresses) + (" ⚠️" if "listens-wide" in s.flags else "")


def stacks_section(stacks: list[StackInfo]) -> str:
    """The Stacks section: one row of declared facts and observed figures per stack, its notes and the last
    log lines of a stack that failed."""
    rows = [(
        s.id, s.language, f"{s.framework} {s.framework_version}".strip(), f"{s.driver} {s.driver_version}".strip(),
        s.server, s.pooler, yes_no(s.prepared_statements),
        NOT_MEASURED if s.lines_of_code is None else f"{s.lines_of_code.total:,}",
        _warmup(s), _listening(s), connection_count(s.peak_connections), ", ".join(s.flags),
        s.status if s.status == "ok" else f"{s.status}: {s.reason}",
    ) for s in stacks]
    text = table(["Stack", "Language", "Framework", "Driver", "Server", "Pooler", "Prepared statements",
                  "Lines of code", "Longest warm-up", "Listens on", "Peak connections", "Flags", "Status"], rows,
                 "lllllllrrlrll")
    text += ("\n\nLines of code: the stack's own sources (`source_globs`), code lines only, counted by pygount. "
             "Longest warm-up: each cell warms, not measured, until its throughput over one-second windows is "
             "steady (or the cap is hit); this is the longest of the stack's cells. Listens on: the TCP addresses "
             "its processes listened on (⚠️ `listens-wide`: not only the loopback address it was given). Peak "
             "connections: most database connections it held at once (pg_stat_activity, polled every 0.2 s).")
    notes = [f"- **{s.id}**: {note}" for s in stacks for note in s.notes]
    failures = [f"<details><summary>{s.id}: last log lines</summary>\n\n```\n{s.log_tail}\n```\n</details>"
                for s in stacks if s.log_tail]
    return "\n\n".join([text, *(["Notes:\n\n" + "\n".join(notes)] if notes else []), *failures])


def environment_section(results: RunResults) -> str:
    """The Environment section: machine, CPU sets, versions, profile, headroom, fairness knobs, placement,
    network and database settings, then the command."""
    env, cfg = results.environment, results.config
    rows = [
        ("pgarena", f"{env.pgarena_version} ({env.pgarena_git_revision})"),
        ("CPU", f"{env.cpu_model} × {env.cpu_count}"),
        ("Memory", f"{env.memory_bytes / 2**30:.1f} GiB"),
        ("Kernel / OS", f"{env.kernel} / {env.os}"),
        ("CPU sets", remote.cpu_sets_text(results) or f"generator {env.generator_cpus}, stack + PostgreSQL "
                     f"{env.server_cpus}" + (" (shared: one-CPU machine)" if env.cpu_sets_shared else "")),
        *remote.environment_rows(results),
        ("PostgreSQL", env.postgres_version or "?"),
        *[(f"engine {name}", version) for name, version in env.engine_versions.items()],
        *[(f"`{cmd}`", out) for cmd, out in env.toolchains.items()],
        ("Profile", f"{cfg.get('profile')}: warm-up {_warmup_rule(cfg)}, {_repetitions(cfg)} × "
                    f"{cfg.get('duration_seconds')} s windows per cell, engine {cfg.get('engine')}"),
        ("CPU accounting", env.cpu_accounting or "psutil sampling"),
        *([("Speed probe", f"on the stack + PostgreSQL CPUs, {env.speed_probe}")] if env.speed_probe else []),
        ("Generator headroom", _headroom(results)),
        ("Fairness knobs", f"{_pool_sizes(cfg)} connections per stack, {cfg.get('workers')} worker(s)"
         + (" — given to no remote target: its deployment sets them (the connections PostgreSQL saw are under "
            "Stacks)" if results.environment.targets else "")),
        ("Roles", network.placement_text(results)),
        ("Network", remote.network_text(results) or network.topology_text(results).removeprefix("Network: ")
         or "stacks connect to PostgreSQL directly"),
        *([("pgarena CPUs", f"{env.pgarena_cpus} (its own process and sampler threads)")] if env.pgarena_cpus else []),
        *([("Stack order", f"shuffled, seed {cfg.get('seed')}: {', '.join(results.stack_order)}")]
          if cfg.get("seed") is not None and results.stack_order else []),
    ]
    if results.database:
        db = results.database
        rows.append(("Database", f"{db.mode}, settings profile {db.settings_profile or '(the server’s own)'}"))
        if db.cpu_affinity is not None or db.cpu_affinity_note:
            rows.append(("PostgreSQL CPUs", db.cpu_affinity_note or f"{db.cpu_affinity} (the postmaster's affinity)"))
        rows += [(f"`{k}`", v) for k, v in db.settings.items() if k in (
            "shared_buffers", "max_connections", "shared_preload_libraries", "synchronous_commit", "fsync", "jit")]
    return table(["", ""], rows) + f"\n\nCommand: `{results.command}`"


def _pool_sizes(cfg: dict) -> str:
    """'pool size 10', or with several: 'pool sizes 10, 50 (a load dimension: each stack started once at each)'."""
    sizes = cfg.get("pool_sizes") or []
    if len(sizes) < 2:
        return f"pool size {cfg.get('pool_size')}"
    return f"pool sizes {', '.join(map(str, sizes))} (a load dimension: each stack started once at each)"


def _warmup_rule(cfg: dict) -> str:
    if cfg.get("warmup_cap_seconds") is None:  # results from before steady warm-ups
        return f"{cfg.get('warmup_seconds')} s"
    return f"until steady, at least {cfg.get('warmup_seconds')} s, at most {cfg.get('warmup_cap_seconds')} s"


def _repetitions(cfg: dict) -> str:
    low, high = cfg.get("repetitions"), cfg.get("max_repetitions", cfg.get("repetitions"))
    if low == high:
        return f"{low}"
    return (f"{low}–{high} (until the 95 % RPS interval is within ±{cfg.get('target_rel_half_width', 0):.0%} "
            f"or {cfg.get('cell_budget_seconds', cfg.get('cell_budget_s'))} s measured)")


def _headroom(results: RunResults) -> str:
    h = results.generator_headroom
    if h is None:
        return f"not measured ({results.environment.headroom_unavailable or 'disabled'})"
    cpu = "" if h.generator_cpu_fraction is None else f", generator CPU {h.generator_cpu_fraction:.0%}"
    text = (f"{number(h.rps)} req/s{f' with {h.engine}' if h.engine else ''}, p99 {milliseconds(h.latency_p99_ms)} at "
            f"{h.connections} connections against a trivial endpoint ({h.endpoint}{cpu})")
    if h.generator_cpu_fraction is not None and h.generator_cpu_fraction <= GENERATOR_BOUND_CPU_FRACTION:
        text += "; the generator was not saturated, so its ceiling is higher still"
    scope = generators.headroom_scope(results)
    return text if scope is None else f"{text}; {scope}"
