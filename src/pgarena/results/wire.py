"""What a stack's driver sent to PostgreSQL for one workload, as the wire observer counted it (issue 25).

Recorded in verification, over a burst of requests sent one at a time (so each figure divides by the burst's
requests), then a concurrent burst that shows whether a driver puts statements of several requests into one
flight (pipelining or batching across requests: the fairness flag). See wire/main.go for the definitions.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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

    def added_per_request(self, kind: StatementKind) -> float:
        """Executions per request of statements of one kind (transaction control, session resets)."""
        return sum(s.per_request for s in self.statements if s.kind == kind)

    @property
    def pipelined(self) -> bool:
        """Some flight of the sequential burst carried more than one statement."""
        return self.pipelined_flights_per_request > 0
