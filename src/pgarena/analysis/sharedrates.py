"""Open-model levels shared by every stack, set from the slowest stack's peak of an earlier run.

A relative rate ('90%') offers each stack a share of its own peak, so stacks get different loads and are
not ranked. A shared level offers every stack the same requests/s. One absolute number (`--rates 1000`)
rarely fits every workload parameter (perf-test rows=1 and rows=500 differ a hundredfold), and pgarena
measures one stack at a time, so the slowest stack's peak of this run is only known after its last stack.
`--shared-rates 50%,90% --shared-rates-from results/<run>` therefore takes, for each workload parameter,
the lowest of the stacks' closed-model peaks (median 2xx/s of their fastest valid cell) in that earlier
run and offers that share of it to every stack: the slowest stack can keep up at shares below 100 %, and
the tables rank p99 at equal offered load (docs/methodology.md, "Open model").
"""

from __future__ import annotations

from pgarena.contract.flags import INEXACT, INVALID
from pgarena.results.models import RunResults

SHARED_SPEC_SUFFIX = " of the slowest peak"
"""Cell.arrival_rate_spec of a shared level: '50% of the slowest peak' (not a relative rate: the same
requests/s for every stack)."""


def rate_key(workload: str, parameter: int | None) -> str:
    """'perf-test/100', 'static': the key of a workload parameter in `RunConfig.shared_rate_peaks`."""
    return workload if parameter is None else f"{workload}/{parameter}"


def slowest_peaks(results: RunResults) -> dict[str, float]:
    """Per workload parameter: the lowest, over the stacks, of each stack's highest median 2xx/s among its
    valid closed-model cells (no invalid flag). Parameters no stack measured validly are left out."""
    peaks: dict[str, dict[str, float]] = {}
    for cell in results.cells:
        if (cell.model != "closed" or cell.status != "ok" or cell.summary is None
                or any(flag in INVALID + INEXACT for flag in cell.flags)):
            continue
        by_stack = peaks.setdefault(rate_key(cell.workload, cell.parameter), {})
        by_stack[cell.stack] = max(by_stack.get(cell.stack, 0.0), cell.summary.rps.median)
    return {key: min(by_stack.values()) for key, by_stack in peaks.items() if by_stack}
