"""The published JSON Schema (docs/results.schema.json) is the one the models generate."""

import json
from pathlib import Path

from pgarena.results import SCHEMA_VERSION, json_schema

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "results.schema.json"


def test_published_schema_is_current():
    published = json.loads(SCHEMA_FILE.read_text())
    assert published == json_schema(), "regenerate with: make schema"


def test_schema_documents_the_version_and_units():
    schema = json_schema()
    assert schema["properties"]["schema_version"]["default"] == SCHEMA_VERSION
    latency = schema["$defs"]["Latency"]["properties"]
    assert all(name.endswith("_ms") for name in latency if name != "censored")
