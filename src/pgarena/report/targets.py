"""What the reports say about remote targets (--target): stacks pgarena loaded but did not start.

Shared by the Markdown and HTML exporters: the warning a reader must see before any figure, the environment
rows, and the stack rows' "not measured" where only the target's own host could have measured.
"""

from __future__ import annotations

from pgarena.results.models import RunResults, StackInfo

NOT_MEASURED = "not measured"
"""How every report prints a figure pgarena could not measure (None in results.json), never as 0."""


def target_stacks(results: RunResults) -> list[StackInfo]:
    """The run's remote targets (stacks with a target URL)."""
    return [s for s in results.stacks if s.target_url is not None]


def warning(results: RunResults) -> str | None:
    """The paragraph every report puts first when the run loaded remote targets (None: it loaded none)."""
    targets = target_stacks(results)
    if not targets:
        return None
    named = ", ".join(f"{s.id} at {s.target_url}" for s in targets)
    text = (f"Remote target{'s' if len(targets) > 1 else ''}: {named}. pgarena did not build, start or stop "
            f"{'them' if len(targets) > 1 else 'it'}: the figures include the network between this machine and "
            f"{'each' if len(targets) > 1 else 'it'}, and what only its own host could measure (its CPU per "
            f"request, memory, cold start, lines of code, host CPU and kernel) is {NOT_MEASURED}.")
    if len(targets) > 1:
        text += (" A ranking between targets compares their deployments — machines, networks, configurations "
                 "pgarena does not know — not the stacks alone.")
    return text


def environment_rows(results: RunResults) -> list[tuple[str, str]]:
    """(name, value) rows of the environment table about the targets' hosts."""
    return [(f"Target {t.stack}", f"{t.url}; its host's CPU, memory and kernel: {NOT_MEASURED}")
            for t in results.environment.targets]


def cpu_sets_text(results: RunResults) -> str | None:
    """The CPU-sets row of a target run (the stacks' CPUs are not pgarena's), None for a local run."""
    if not results.environment.targets:
        return None
    env = results.environment
    return (f"generator {env.generator_cpus} (the stacks are remote targets: their CPUs are not pinned or known "
            "to pgarena)")


def network_text(results: RunResults) -> str | None:
    """The network row of a target run (None for a local run): what lies between here, the targets and PostgreSQL."""
    if not results.environment.targets:
        return None
    return ("from this machine to each remote target over its URL, and from each target to PostgreSQL over its own "
            f"network: neither is set up by pgarena, and their round trips are {NOT_MEASURED} (they are in every "
            "latency figure)")
