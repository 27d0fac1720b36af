"""The published JSON Schema (docs/results.schema.json) is the one the models generate."""

import json
from pathlib import Path

from pgarena.results.models import SCHEMA_VERSION
from pgarena.results.store import json_schema

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "results.schema.json"


def test_published_schema_is_current():
    published = json.loads(SCHEMA_FILE.read_text())
    assert published == json_schema(), "regenerate with: make schema"


def test_schema_documents_the_version_and_units():
    schema = json_schema()
    assert schema["properties"]["schema_version"]["default"] == SCHEMA_VERSION
    latency = schema["$defs"]["Latency"]["properties"]
    assert all(name.endswith("_ms") for name in latency if name != "censored")


def test_a_schema_2_document_is_migrated_rps_becoming_answered_work(tmp_path):
    """Schema 2 stored every completed request per second as `rps`; 3 stores 2xx answers per second."""
    import json

    from pgarena.results.store import load, save
    from tests.fixtures.report_run import sample_results

    results = sample_results()
    save(results, tmp_path)
    document = json.loads((tmp_path / "results.json").read_text())
    document["schema_version"] = 2
    for cell in document["cells"]:
        for rep in cell["repetitions"]:
            rep["rps"] = rep.pop("requests_per_second_all") or rep["requests"] / rep["duration_seconds"]
            rep["status_codes"] = {"200": rep["requests"] - 7, "500": 7}  # some failed in schema 2's figure
        if cell.get("summary"):
            cell["summary"].pop("requests_per_second_all", None)
    (tmp_path / "results.json").write_text(json.dumps(document))
    migrated = load(tmp_path)
    assert migrated.schema_version == SCHEMA_VERSION == 4
    cell = next(c for c in migrated.cells if c.repetitions and c.summary)
    rep = cell.repetitions[0]
    assert rep.rps == (rep.requests - 7) / rep.duration_seconds
    assert rep.requests_per_second_all == rep.requests / rep.duration_seconds
    assert cell.summary.requests_per_second_all is not None
    import statistics

    assert cell.summary.rps.median == statistics.median(r.rps for r in cell.repetitions)
    if cell.summary.rps_interval is not None:
        assert cell.summary.rps_interval.low <= statistics.fmean(r.rps for r in cell.repetitions) <= \
            cell.summary.rps_interval.high


def test_a_schema_3_document_stores_its_durations_in_seconds_after_loading(tmp_path):
    """Schema 3 stored the configuration's durations as `duration_s`; 4 uses the document's `_seconds`."""
    import json

    from pgarena.results.store import load, save
    from tests.fixtures.report_run import sample_results

    save(sample_results(), tmp_path)
    document = json.loads((tmp_path / "results.json").read_text())
    document["schema_version"] = 3
    config = document["config"]
    for name in ("duration", "warmup", "warmup_cap"):
        config[f"{name}_s"] = config.pop(f"{name}_seconds")
    (tmp_path / "results.json").write_text(json.dumps(document))
    migrated = load(tmp_path)
    assert migrated.schema_version == 4
    assert migrated.config["duration_seconds"] == 2.0 and migrated.config["warmup_cap_seconds"] == 15.0
    assert not [key for key in migrated.config if key.endswith("_s")]


def test_the_stored_configuration_uses_seconds_and_is_read_back(monkeypatch, tmp_path):
    """A run's stored config has no `_s` key, and a resumed run reads it back into the same settings."""
    from pgarena.config.profiles import build_config
    from pgarena.config.run import RunConfig

    monkeypatch.setattr("pgarena.config.profiles.default_cpu_sets", lambda: ([0], [1]))
    config = build_config(profile="quick", project_dir=tmp_path, overrides={"duration_s": 3.5})
    stored = config.redacted()
    assert stored["duration_seconds"] == 3.5 and not [key for key in stored if key.endswith("_s")]
    assert RunConfig.model_validate(stored) == config

