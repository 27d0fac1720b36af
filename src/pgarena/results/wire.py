"""What a stack's driver sent to PostgreSQL for one workload, as the wire observer counted it (issue 25).

Recorded in verification, over a burst of requests sent one at a time (so each figure divides by the burst's
requests), then a concurrent burst that shows whether a driver puts statements of several requests into one
flight (pipelining or batching across requests: the fairness flag). See wire/main.go for the definitions.
With `--wire-under-load`, a second profile of the same shape covers a few seconds of load at the run's highest
VU count (its `load` says how it was driven; pipeline/wireload.py): what a pool does when it is busy.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CAP_REACHED = 0.95
"""Share of an under-load window's request cap from which the cap, not the stack, set the pace."""

StatementKind = Literal["workload", "transaction", "session"]
"""`workload`: the request's own statements; `transaction`: BEGIN, COMMIT, ROLLBACK, SAVEPOINT and the like;
`session`: what a driver or pool runs to set up or reset a connection (SET, RESET, DISCARD, DEALLOCATE, CLOSE,
UNLISTEN, pg_advisory_unlock_all, ...)."""


class WireStatement(BaseModel):
    """One statement text the driver executed during the burst (an Execute of its prepared statement or a
    simple-protocol Query, whose text may hold several statements)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="the statement as sent (up to 400 characters)")
    kind: StatementKind
    per_request: float = Field(description="executions per request of the burst")


class WireLoad(BaseModel):
    """How the interval of an under-load profile was driven and what the stack's pool did in it (the
    stack's second, unmeasured start, through the observer)."""

    model_config = ConfigDict(extra="forbid")

    engine: str = Field(description="the run's load generator (oha or k6)")
    vus: int = Field(description="requests in flight at most: the workload's highest closed-model VU count")
    parameter: int | None = Field(None, description="the workload's parameter (the burst's)")
    duration_seconds: float = Field(description="the generator's window")
    request_cap: int = Field(description=(
        "most requests of the window: the generator's arrival rate is this over the window, so a stack faster "
        "than that saw fewer than `vus` requests in flight"))
    pool_size: int | None = Field(None, description="the PGARENA_POOL_SIZE the second start was given")
    peak_open_connections: int = Field(description="most connections to PostgreSQL open at once in the window")
    connections_closed: int = Field(0, description="connections the stack closed in the window (pool churn, "
                                                   "with the profile's `connections_opened`)")


class WireProfile(BaseModel):
    """Per-request protocol figures of one stack × workload (all `_per_request` figures are means over the
    sequential burst; messages count whole PostgreSQL protocol messages, bytes include their headers)."""

    model_config = ConfigDict(extra="forbid")

    requests: int = Field(description="requests of the sequential burst (each 2xx or not; `answered` says)")
    answered: int = Field(description="of them answered 200")
    connections: int = Field(description="connections that carried the burst's statements")
    connections_opened: int = Field(0, description="connections the stack opened during the burst")
    round_trips_per_request: float = Field(description=(
        "times per request the driver sent something after the server had answered and so had waited for it "
        "(connection set-up excluded, see `setup_round_trips`)"))
    setup_round_trips: int = Field(0, description="round trips of connections opened during the burst, before "
                                                  "their first ReadyForQuery (start-up, authentication)")
    statements_per_request: float = Field(description="Execute and Query messages per request")
    client_messages_per_request: dict[str, float] = Field(description="message type (Parse, Bind, ...) → count")
    server_messages_per_request: dict[str, float] = Field(description="message type (DataRow, ...) → count")
    bytes_to_server_per_request: float
    bytes_to_client_per_request: float
    prepared_per_request: float = Field(description="Parse messages naming a statement (prepared to keep)")
    unnamed_parses_per_request: float = Field(description="Parse messages of the unnamed statement (one use)")
    reused_per_request: float = Field(description="Binds of a named statement already bound before")
    pipelined_flights_per_request: float = Field(description="flights carrying more than one statement")
    peak_statements_per_flight: int = Field(description="most statements in one flight, sequential burst")
    concurrent_requests: int = Field(0, description="requests of the concurrent burst (0: not run)")
    concurrent_peak_statements_per_flight: int | None = Field(None, description=(
        "most statements in one flight during the concurrent burst"))
    across_requests: bool = Field(False, description=(
        "statements of several requests shared a flight in the concurrent burst (more per flight than any "
        "single request sends): the stack pipelines or batches across requests"))
    statements: list[WireStatement] = Field(default_factory=list)
    observer_cpu_seconds: float | None = Field(None, description="the observer's own CPU during both bursts")
    unobservable_connections: int = Field(0, description="encrypted connections the observer could not read")
    load: WireLoad | None = Field(None, description=(
        "an under-load profile (`--wire-under-load`): how its interval was driven; its `requests` are the "
        "generator's completed requests, `concurrent_*` stay unset and `across_requests` compares the load's "
        "peak statements per flight with the sequential burst's; None: a burst profile"))

    def added_per_request(self, kind: StatementKind) -> float:
        """Executions per request of statements of one kind (transaction control, session resets)."""
        return sum(s.per_request for s in self.statements if s.kind == kind)

    @property
    def capped(self) -> bool:
        """An under-load profile whose generator reached its request cap (`CAP_REACHED` of it): the stack was
        faster than the cap's rate, so it had fewer than `load.vus` requests in flight."""
        return self.load is not None and self.requests >= CAP_REACHED * self.load.request_cap

    @property
    def pipelined(self) -> bool:
        """Some flight of the sequential burst carried more than one statement."""
        return self.pipelined_flights_per_request > 0
