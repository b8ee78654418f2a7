"""hide_module.py hides an installed package the way transformers checks for it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HIDE = str(Path(__file__).resolve().parents[2] / "triage" / "repro" / "scenarios" / "hide_module.py")

PROBE = """
import importlib.util, importlib.metadata as md, json
out = {"spec": importlib.util.find_spec("accelerate") is not None}
try:
    md.version("accelerate"); out["dist"] = True
except md.PackageNotFoundError:
    out["dist"] = False
out["dists"] = sorted({(d.metadata["Name"] or "").lower() for d in md.distributions()})
try:
    import accelerate.utils; out["import"] = "ok"
except ModuleNotFoundError as e:
    out["import"] = str(e)
import json as j2  # other modules unaffected
print(json.dumps(out))
"""


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@pytest.mark.skipif(not _installed("accelerate"), reason="accelerate not installed here")
def test_hidden_package_is_absent_for_find_spec_metadata_and_import():
    p = subprocess.run(
        [sys.executable, HIDE, "accelerate", "--", "-c", PROBE], capture_output=True, text=True, check=True
    )
    out = json.loads(p.stdout)
    assert out["spec"] is False and out["dist"] is False
    assert "accelerate" not in out["dists"] and "pytest" in out["dists"]
    assert out["import"] == "No module named 'accelerate'"


@pytest.mark.skipif(not _installed("accelerate"), reason="accelerate not installed here")
def test_without_the_wrapper_it_is_there():
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    out = json.loads(p.stdout)
    assert out["spec"] is True and out["dist"] is True and out["import"] == "ok"


@pytest.mark.skipif(
    not (_installed("accelerate") and _installed("transformers")), reason="needs transformers and accelerate"
)
def test_transformers_own_check_sees_no_accelerate():
    code = "from transformers.utils import is_accelerate_available\nprint(is_accelerate_available())\n"
    hidden = subprocess.run(
        [sys.executable, HIDE, "accelerate", "--", "-c", code], capture_output=True, text=True, check=True
    )
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert hidden.stdout.strip() == "False"
    assert plain.stdout.strip() == "True"


def test_runs_modules_and_scripts_with_their_argv(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import sys; print(sys.argv[1:])\n")
    p = subprocess.run(
        [sys.executable, HIDE, "nothing_by_this_name", "--", str(script), "a", "b"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert p.stdout.strip() == "['a', 'b']"
    p = subprocess.run(
        [sys.executable, HIDE, "x", "--", "-m", "json.tool", "--help"], capture_output=True, text=True
    )
    assert p.returncode == 0 and "usage" in p.stdout.lower()


def test_usage_error_without_separator():
    p = subprocess.run([sys.executable, HIDE, "accelerate"], capture_output=True, text=True)
    assert p.returncode != 0 and "usage" in p.stderr
