"""The base of every record of the results document."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A record of results.json: a pydantic model whose unknown keys are errors (`extra="forbid"`), so a
    document that does not match its schema version fails to load instead of losing fields silently."""

    model_config = ConfigDict(extra="forbid")
