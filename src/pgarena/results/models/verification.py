"""Verification of one stack × workload before load: checks, column verdicts, bad input, database
accounting, TPC-B invariants."""

from __future__ import annotations

from pydantic import Field

from pgarena.contract.values import Verdict
from pgarena.results.models.base import Record
from pgarena.results.wire import WireProfile


class Check(Record):
    """One yes/no verification check with what was seen."""

    name: str
    ok: bool
    detail: str | None = None


class ColumnVerdict(Record):
    """The worst verdict over every compared value of one column, with the first reason."""

    column: str
    pg_type: str
    verdict: Verdict
    reason: str | None = None


class BadInputCase(Record):
    """One malformed request and how the stack answered it."""

    description: str
    path: str
    status: int | None
    ok: bool = Field(description="400 with a JSON body")
    detail: str | None = None


class TxInvariants(Record):
    """TPC-B consistency over one tx cell (or the verification requests): see txcheck.py."""

    holds: bool
    answered_200: int = Field(description="200 answers the generator counted (warm-up included)")
    history_rows_added: int
    accounts_delta: int
    tellers_delta: int
    branches_delta: int
    history_delta: int
    unknown_outcome: int = Field(0, description="requests without an answer (timeouts, resets): may have committed")
    unknown_committed: int = Field(0, description="how many of those did commit (history rows beyond the 200s)")
    problem: str | None = None


class DbAccounting(Record):
    """pg_stat_statements over a burst of identical requests (accounting.py)."""

    requests: int
    workload_statements_per_request: float = Field(description="statements naming the workload's objects")
    rows_per_request: float = Field(description="rows those statements returned or changed, per request")
    other_statements_per_request: float = Field(description="BEGIN/COMMIT, SET, resets, pings, ...")
    expected_statements_per_request: int
    allowed_other_statements_per_request: int
    top_other_statements: dict[str, int] = Field(default_factory=dict, description="query text → calls")
    verdict: Verdict
    reason: str | None = None
    statements_by_limit: dict[int, float] | None = Field(None, description=(
        "graphql-nested / users-posts: workload statements per request at each users limit of the N+1 probe"))
    posts_statements_by_limit: dict[int, float] | None = Field(None, description=(
        "graphql-nested / users-posts: statements reading the posts (a join or a view over both included) per "
        "request at each users limit of the N+1 probe; fewer than 1 is a posts cache"))
    n_plus_one: bool | None = Field(None, description=(
        "graphql-nested / users-posts: statements per request grow with the limit (one query per user); shown, "
        "never invalid"))


class WorkloadVerification(Record):
    """Verification of one stack × workload, before any load."""

    stack: str
    workload: str
    ok: bool = Field(description="status, content type and shape right; the workload is loaded")
    checks: list[Check]
    columns: list[ColumnVerdict] = Field(default_factory=list)
    bad_input: list[BadInputCase] = Field(default_factory=list)
    accounting: DbAccounting | None = None
    accounting_unavailable: str | None = Field(None, description="why there is no accounting")
    tx_invariants: TxInvariants | None = Field(None, description="over the verification's tx requests")
    answer_mapping: str | None = Field(None, description=(
        "the shape the stack's stack.toml [answer] declares and pgarena undid before judging the values, e.g. "
        "'envelope \"data\", camelCase keys' (the cells are flagged answer-mapped); None: answers judged as sent"))
    wire: WireProfile | None = Field(None, description="what the driver sent to PostgreSQL (results/wire.py)")
    wire_unavailable: str | None = Field(None, description="why there is no wire profile")
    wire_under_load: WireProfile | None = Field(None, description=(
        "`--wire-under-load`: the same figures over a few seconds of load at the highest VU count, from the "
        "stack's second, unmeasured start (its `load` says how it was driven); None: not asked, or not measured"))
    wire_under_load_unavailable: str | None = Field(None, description=(
        "why there is no under-load profile although one was asked for"))

    @property
    def wrong_columns(self) -> list[str]:
        """The columns judged ❌."""
        return [c.column for c in self.columns if c.verdict is Verdict.WRONG]

    @property
    def content_type_wrong(self) -> bool:
        """A failed content-type check (the answer's JSON may still be right: see verify/verification.py)."""
        return any(not c.ok and c.name.endswith(": content type JSON") for c in self.checks)
