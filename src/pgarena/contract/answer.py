"""A stack's documented answer shape (stack.toml `[answer]`): what pgarena undoes before it judges the values.

The contract's row answers are a bare JSON array of objects whose keys are the column names (docs/contract.md).
Some servers cannot answer that shape: FraiseQL's REST transport wraps the rows in an envelope
(`{"data": [...], "meta": {...}}`) and writes the keys in camelCase (`fullName`). A stack that declares

    [answer]
    envelope = "data"      # the rows are the member "data" of a JSON object; other members are ignored
    keys = "camelCase"     # the contract's snake_case keys arrive in camelCase

has each of its row answers taken out of the envelope and its keys mapped back (`fullName` → `full_name`)
before the values are judged, exactly as every other stack's are. Nothing else is forgiven: a missing
envelope, a non-object answer or two keys that map to the same name are failures that say so. Its cells are
flagged `answer-mapped` (flags.ANSWER_MAPPED): loaded and measured, ranked among all stacks only.

NOTE: the mapping applies to MAPPED_WORKLOADS only — the answers that are rows. GraphQL's `{"data": ...}` is its
own contract (graphql, graphql-nested), and static and tx answer one fixed object. Keys are mapped where they
are the contract's structure — the keys of each row and of each item of ROW_LISTS' columns (users-posts'
`posts`) — never inside a value: perf-test's json_val, perf-post's echo or perf-nested's document are data
the database built, judged as they come.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pgarena.contract import workloads as wl
from pgarena.contract.values import json_kind

KEY_STYLES = ("camelCase",)
"""How a stack may write the contract's snake_case keys (`keys = ...`)."""
MAPPED_WORKLOADS: tuple[str, ...] = (wl.PERF_TEST, wl.USERS, *wl.SCENARIOS, wl.USERS_POSTS)
"""Workloads whose answer is JSON rows: the ones an `[answer]` mapping applies to."""
ROW_LISTS: dict[str, tuple[str, ...]] = {wl.USERS_POSTS: ("posts",)}
"""Columns whose value is itself a list of rows: their items' keys are mapped too."""

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class AnswerShapeError(ValueError):
    """An answer that does not have the shape its stack declared; the message says what is missing."""


def snake_case(key: str) -> str:
    """`fullName` → `full_name`, `createdAt` → `created_at`, `userID` → `user_id`; snake_case keys unchanged."""
    return _CAMEL_BOUNDARY.sub("_", key).lower()


def _map_keys(row: Any, where: str) -> Any:
    """One object with its keys mapped to snake_case (anything else is returned as is, to be judged)."""
    if not isinstance(row, dict):
        return row
    mapped: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key, value in row.items():
        name = snake_case(key)
        if name in mapped:
            raise AnswerShapeError(f"{where}: keys '{origin[name]}' and '{key}' both map to '{name}' "
                                   "(stack.toml [answer] keys = \"camelCase\")")
        mapped[name], origin[name] = value, key
    return mapped


@dataclass(frozen=True)
class AnswerShape:
    """The answer shape one stack declares: an envelope member holding the rows, a key style, or both."""

    envelope: str | None = None
    """The member of a JSON object that holds the rows (None: the rows are the answer itself)."""
    keys: str | None = None
    """A style of KEY_STYLES the contract's keys arrive in (None: the contract's own names)."""

    def applies_to(self, workload: str) -> bool:
        """The mapping changes this workload's answers (a row workload, and something declared)."""
        return workload in MAPPED_WORKLOADS and (self.envelope is not None or self.keys is not None)

    def describe(self) -> str:
        """'envelope "data", camelCase keys': what the mapping undoes, for reports and logs."""
        parts = ([f'envelope "{self.envelope}"'] if self.envelope is not None else []) + (
            [f"{self.keys} keys"] if self.keys is not None else [])
        return ", ".join(parts)

    def unwrap(self, workload: str, body: Any) -> Any:
        """The contract's answer inside a parsed answer of `workload`: the envelope's member, keys mapped.

        Workloads the mapping does not apply to come back unchanged. Raises AnswerShapeError when the answer
        is not an object holding the envelope member, or when two keys of one object map to the same name."""
        if not self.applies_to(workload):
            return body
        if self.envelope is not None:
            if not isinstance(body, dict):
                raise AnswerShapeError(f'not a JSON object with a member "{self.envelope}" but '
                                       f'{json_kind(body)} (stack.toml [answer] envelope = "{self.envelope}")')
            if self.envelope not in body:
                found = ", ".join(f'"{k}"' for k in list(body)[:5]) or "none"
                raise AnswerShapeError(f'no member "{self.envelope}" in the answer (members: {found}; stack.toml '
                                       f'[answer] envelope = "{self.envelope}")')
            body = body[self.envelope]
        if self.keys is None or not isinstance(body, list):
            return body
        rows = []
        for index, row in enumerate(body, start=1):
            row = _map_keys(row, f"row {index}")
            for column in ROW_LISTS.get(workload, ()):
                items = row.get(column) if isinstance(row, dict) else None
                if isinstance(items, list):
                    row[column] = [_map_keys(item, f"row {index}, {column} item {n}")
                                   for n, item in enumerate(items, start=1)]
            rows.append(row)
        return rows


NO_MAPPING = AnswerShape()
"""The contract's own shape: every answer judged as sent."""
