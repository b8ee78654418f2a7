from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATHS = [
    ROOT.parent / "shared" / "schemas" / "report.schema.json",
    ROOT / "tests" / "data" / "report.schema.json",
]

# One name for every golden file (console, formats, the TUI screen): set it to rewrite them.
UPDATE_GOLDEN = "TRIAGE_UPDATE_GOLDEN"

# Property tests: in CI the same examples every run (derandomized, no example database),
# so a red build is the code's fault and reruns agree; locally hypothesis explores new
# examples each run and remembers the failures it finds. HYPOTHESIS_PROFILE overrides.
# Both name hypothesis' own defaults as parent: without one, a profile inherits from
# whichever is loaded when it is read.
_BASE = settings.get_profile("default")
settings.register_profile(
    "ci",
    parent=_BASE,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)  # timing on a shared runner is not a bug
settings.register_profile("dev", parent=_BASE, deadline=None)


def hypothesis_profile(env: Mapping[str, str]) -> str:
    """The hypothesis profile for an environment: `ci` where CI is set (CI=true), else `dev`."""
    if env.get("HYPOTHESIS_PROFILE"):
        return env["HYPOTHESIS_PROFILE"]
    return "ci" if env.get("CI", "").lower() not in ("", "0", "false", "no") else "dev"


settings.load_profile(hypothesis_profile(os.environ))

# The crash history is on by default for users; the suite must neither write the real
# ~/.local/state nor a team's store, nor see its own earlier runs in the reports (golden
# files). tests/history turns it on, per test, in a temporary state folder.
os.environ["TRIAGE_HISTORY"] = "off"
os.environ.pop("TRIAGE_HISTORY_URL", None)
# Nor the user's ~/.cache: the compiled scan database goes to one folder for the session
# (compiled once, shared by the triage subprocesses the tests start), removed at exit.
_CACHE = tempfile.mkdtemp(prefix="triage-test-cache-")
os.environ["TRIAGE_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)


def check_golden(path: Path, text: str) -> None:
    """Compare `text` with a golden file. A missing golden file fails (a fresh clone
    must not write its own expectation); TRIAGE_UPDATE_GOLDEN=1 rewrites it."""
    if os.environ.get(UPDATE_GOLDEN):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if not path.exists():
        pytest.fail(
            f"golden file {path} is missing: run with {UPDATE_GOLDEN}=1 to write it, "
            "then review and commit it"
        )
    assert text == path.read_text()


@pytest.fixture(scope="session")
def golden() -> Callable[[Path, str], None]:
    """`golden(path, text)`: the text must equal the golden file (see `check_golden`)."""
    return check_golden


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
