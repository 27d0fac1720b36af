"""One fault injected into a stack's steady load (the resilience run)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pgarena.results.models.base import Record
from pgarena.results.models.verification import TxInvariants


class FaultResult(Record):
    """One fault injected into one stack's steady load (issue 14, pipeline/resilience.py; analysis/recovery.py
    defines every figure)."""

    stack: str
    workload: str
    parameter: int | None
    fault: Literal["pg-restart", "terminate", "stall", "reset"]
    description: str = Field(description="what was done, e.g. 'pg_ctl restart -m fast'")
    engine: str
    rate_rps: float | None = Field(None, description="the open-model arrival rate of the window (None: not run)")
    peak_rps: float | None = Field(None, description="the stack's closed-model peak the rate is a share of")
    window_seconds: float | None = None
    fault_start_s: float | None = Field(None, description="seconds from the window's start")
    fault_end_s: float | None = None
    status: Literal["recovered", "never-recovered", "no-baseline", "unsteady-baseline", "not-run"]
    baseline_rps: float | None = None
    failed_requests: int | None = Field(None, description="non-2xx, unanswered and dropped (due but never sent) "
                                                          "requests from the fault's start until recovery (None: not "
                                                          "measured)")
    unanswered: int | None = None
    errors_by_kind: dict[str, int] = Field(default_factory=dict)
    first_ok_after_s: float | None = Field(None, description="fault end → first 2xx answer (resolution: one bin)")
    recovered_after_s: float | None = Field(None, description="fault end → 2xx/s back within 10 % for 1 s")
    recovered_without_restart: bool | None = Field(None, description=(
        "after the window the stack, not restarted, answered its health path and a verified request correctly"))
    bin_seconds: float = 0.1
    timeline_ok: list[int] = Field(default_factory=list, description="2xx answers per bin")
    timeline_failed: list[int] = Field(default_factory=list, description="failed requests per bin")
    tx_invariants: TxInvariants | None = Field(None, description="tx: TPC-B consistency across the window")
    reason: str | None = Field(None, description="why it was not run or not measured")
