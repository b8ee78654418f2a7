from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATHS = [ROOT.parent / "shared" / "schemas" / "report.schema.json",
                ROOT / "tests" / "data" / "report.schema.json"]


@pytest.fixture(scope="session")
def report_schema() -> dict:
    for p in SCHEMA_PATHS:
        if p.is_file():
            return json.loads(p.read_text())
    pytest.fail("report.schema.json not found")


@pytest.fixture(scope="session")
def validate_report(report_schema):
    import jsonschema

    def check(data: dict) -> None:
        jsonschema.validate(data, report_schema)

    return check
