"""The HTML report: built from real fixtures through the CLI, opened in a real headless
Chromium (the system's, driven by playwright), checked the way a reader would see it:
no console errors, no request leaving the page, every chart drawn with the series it
should have, text that can be selected. A screenshot of the 8-rank OOM cascade is kept
under build/test-artifacts/ (TRIAGE_ARTIFACTS to move it) for a person to look at."""

from __future__ import annotations

import io
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from triage.cli import main
from triage.engine import analyze
from triage.structure.timeline import SERIES_POINTS, Thinned

ROOT = Path(__file__).resolve().parent.parent
OOM = ROOT / "fixtures/cuda-oom/001-rank3-cascade-8ranks/input.log"
CUT = ROOT / "fixtures/truncated-unknown/002-story-cut-off-no-evidence/input.log"
HEALTHY = ROOT / "fixtures/none/001-clean-torchrun-tee/input.log"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MAX_BYTES = 2 * 1024 * 1024


def _write_report(tmp_path: Path, *paths: Path, extra: tuple[str, ...] = ()) -> Path:
    out = tmp_path / "report.html"
    code = main(["logs", *map(str, paths), "--format", "html", "-o", str(out), *extra])
    assert code == 0
    return out


def _rank_folder(tmp_path: Path, ranks: int = 500) -> Path:
    """A folder of per-rank logs: every rank trains to step 12, rank 137 dies of an OOM
    at step 9 and the others time out in the collective after it."""
    folder = tmp_path / "ranks"
    folder.mkdir()
    for r in range(ranks):
        lines = ["Initializing process group"]
        last = 9 if r == 137 else 12
        lines += [
            f"step {s} loss {2.5 - s * 0.05 + r * 1e-4:.4f} tok/s {21000 + s}" for s in range(1, last + 1)
        ]
        if r == 137:
            lines.append(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                "GPU 1 has a total capacity of 79.19 GiB of which 1.02 GiB is free."
            )
        else:
            lines.append(
                f"[Rank {r}] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=77, OpType=ALLREDUCE) ran for 600016 milliseconds "
                "before timing out."
            )
        (folder / f"rank{r}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


# -- in the browser ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have Chromium: .ci/run installs it")
        pytest.skip("no system Chromium here (apt-get install chromium); .ci/run installs it")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        # the system's browser: playwright downloads nothing; its own temporary profile
        # is a fresh user-data-dir each launch
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            yield b
        finally:
            b.close()


class Opened:
    """A report open in a page, with what the page said and asked for while loading."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.url = path.resolve().as_uri()
        self.page = browser.new_page(viewport={"width": 1100, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)
        self.page.goto(self.url, wait_until="load")

    def _route(self, route: Any) -> None:
        if route.request.url == self.url:
            route.continue_()
            return
        self.requests.append(route.request.url)
        route.abort()

    def chart(self, kind: str) -> Any:
        return self.page.locator(f'figure.chart[data-chart="{kind}"]')

    def series(self, kind: str) -> int:
        """Drawn lines/bars in a chart: the SVG groups matplotlib named series-N."""
        return int(self.chart(kind).locator('svg g[id^="series-"]').count())

    def timeline_rows(self) -> int:
        """Bars in the timeline: each row's outline is one path of the `rows` group."""
        rows = self.chart("timeline").locator('svg g[id="rows"]')
        return int(rows.locator(":scope > path, :scope > use").count())

    def inked(self, kind: str) -> float:
        """The share of the chart's pixels that are not background."""
        from PIL import Image

        png = self.chart(kind).locator("svg").screenshot()
        img = Image.open(io.BytesIO(png)).convert("L")
        hist = img.histogram()
        return 1 - sum(hist[245:]) / (img.width * img.height)

    def close(self) -> None:
        self.page.close()


def _clean(o: Opened) -> None:
    assert o.errors == []
    assert o.requests == []  # nothing leaves the page (the CSP would block it anyway)


def test_oom_cascade_report_in_the_browser(browser: Any, tmp_path: Path) -> None:
    out = _write_report(tmp_path, OOM)
    o = Opened(browser, out)
    try:
        _clean(o)
        page = o.page
        assert "CUDA out of memory" in page.locator(".verdict").inner_text()
        # the cascade: rank 3 failed first, the other seven after it
        cascade = page.locator(".cascade").inner_text()
        assert cascade.startswith("Rank 3 failed first")
        assert "0-2,4-7" in cascade
        assert o.timeline_rows() == 9  # 8 ranks and the launcher
        assert o.chart("timeline").locator('svg g[id="marker-first"]').count() == 1
        assert o.series("loss") == 8 and o.series("tok_s") == 8
        assert o.chart("loss").locator('svg g[id="marker-failure"]').count() == 1
        for kind in ("timeline", "loss", "tok_s"):
            assert o.inked(kind) > 0.02, kind
        # a reader can select text, in the prose and in a chart's labels
        page.locator(".verdict").click(click_count=3)
        assert "CUDA out of memory" in page.evaluate("getSelection().toString()")
        assert page.locator(".verdict").evaluate("e => getComputedStyle(e).userSelect") != "none"
        label = o.chart("timeline").locator("svg text", has_text="rank 3").first
        label.click(click_count=3)
        assert "rank 3" in page.evaluate("getSelection().toString()")
        shots = Path(os.environ.get("TRIAGE_ARTIFACTS", ROOT / "build/test-artifacts"))
        shots.mkdir(parents=True, exist_ok=True)
        shot = shots / "html-cuda-oom-001-rank3-cascade-8ranks.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    finally:
        o.close()


def test_cut_off_log_shows_where_it_stopped(browser: Any, tmp_path: Path) -> None:
    o = Opened(browser, _write_report(tmp_path, CUT))
    try:
        _clean(o)
        stopped = o.page.locator("section.stopped")
        assert "model-loading" in stopped.inner_text()
        # the hypotheses side by side, each with the check that tells it apart
        cards = stopped.locator(".card")
        assert cards.count() == 3  # missing-accelerate, host-oom-killed, still running
        boxes = [cards.nth(i).bounding_box() for i in range(2)]
        assert boxes[0]["y"] == boxes[1]["y"] and boxes[0]["x"] < boxes[1]["x"]
        assert all("Tells it apart" in cards.nth(i).inner_text() for i in range(3))
        assert o.timeline_rows() == 1
    finally:
        o.close()


def test_healthy_log_report(browser: Any, tmp_path: Path) -> None:
    r = analyze([str(HEALTHY)])
    o = Opened(browser, _write_report(tmp_path, HEALTHY))
    try:
        _clean(o)
        assert o.page.locator(".verdict").inner_text().startswith("No failure")
        assert o.page.locator("section.stopped").count() == 0
        assert o.timeline_rows() == len(r.timeline)
        assert o.chart("timeline").locator('svg g[id^="marker-"]').count() == 0
        assert o.series("loss") == len([s for s in r.series if s.name == "loss"]) > 0
        assert o.inked("loss") > 0.02
    finally:
        o.close()


def test_500_rank_folder_report(browser: Any, tmp_path: Path) -> None:
    out = _write_report(tmp_path, _rank_folder(tmp_path))
    assert out.stat().st_size < MAX_BYTES
    o = Opened(browser, out)
    try:
        _clean(o)
        assert o.timeline_rows() == 500
        assert o.page.locator(".cascade").inner_text().startswith("Rank 137 failed first")
        assert o.series("loss") == 8  # ranks drawn per metric: 500 lines would be a smear
        assert o.inked("timeline") > 0.05
    finally:
        o.close()


def test_gpu_chart_from_the_snapshot(browser: Any, tmp_path: Path) -> None:
    import json

    case = ROOT / "fixtures/host-oom-killed/003-story-cut-off-kernel-oom"
    snap = json.loads((case / "evidence.json").read_text(encoding="utf-8"))
    for d in snap["gpus"]["devices"]:  # a run that held its GPUs: memory in use, busy
        d["memory_used_mib"], d["utilization_pct"] = 70000 + 1000 * d["index"], 90 + d["index"]
    ev = tmp_path / "evidence.json"
    ev.write_text(json.dumps(snap), encoding="utf-8")
    o = Opened(browser, _write_report(tmp_path, case / "input.log", extra=("--evidence", str(ev))))
    try:
        _clean(o)
        gpus = o.chart("gpus")
        assert gpus.get_attribute("data-series") == "8"
        assert gpus.locator('svg g[id="series-0"]').count() == 8  # a used-memory bar per GPU
        assert gpus.locator("svg text", has_text="75.2 / 80 GiB").count() == 1  # GPU 7: 77000 MiB
        assert o.inked("gpus") > 0.05
    finally:
        o.close()


def test_nonfinite_values_and_step_times_are_drawn(browser: Any, tmp_path: Path) -> None:
    nan = ROOT / "fixtures/nan-loss/005-repro-nan-loss/input.log"
    o = Opened(browser, _write_report(tmp_path, nan))
    try:
        _clean(o)
        assert o.chart("loss").locator('svg g[id="marker-nonfinite"]').count() == 1
        assert o.chart("loss").locator("svg text", has_text="NaN/inf (4)").count() == 1
    finally:
        o.close()
    timed = ROOT / "fixtures/nccl-timeout/003-torch24-rank5-saving-viewer-linenos/input.log"
    (tmp_path / "t").mkdir()
    o = Opened(browser, _write_report(tmp_path / "t", timed))
    try:
        _clean(o)
        assert o.series("step_time_s") == 8  # from each rank's own timestamps
        # its last lines carry no timestamp: the timeline falls back to line numbers
        assert o.chart("timeline").locator("svg text", has_text="log line").count() == 1
        assert o.timeline_rows() == 8
        assert o.inked("step_time_s") > 0.02
    finally:
        o.close()


# -- the page itself ------------------------------------------------------------------------
def test_redacted_page_masks_secrets(tmp_path: Path) -> None:
    token = "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"
    log = tmp_path / "train.log"
    log.write_text(
        f"export HF_TOKEN={token}\nstep 1 loss 2.0\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
        encoding="utf-8",
    )
    page = _write_report(tmp_path, log, extra=("--redact",)).read_text(encoding="utf-8")
    assert token not in page
    assert "&lt;HF_TOKEN" in page  # the placeholder, escaped like any log text


def test_page_loads_nothing_and_escapes_log_text(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        'step 1 loss 2.0\nRuntimeError: <script>alert(1)</script> <img src="http://x/y">\n', encoding="utf-8"
    )
    page = _write_report(tmp_path, log).read_text(encoding="utf-8")
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;" in page
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page)


def test_html_without_the_extra_is_a_one_line_error(tmp_path: Path) -> None:
    # the extra is absent when its module cannot be imported: run triage so
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from triage.cli import main\n"
        f"sys.exit(main(['logs', {str(OOM)!r}, '--format', 'html', '-o', {str(tmp_path / 'r.html')!r}]))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "pip install 'triage[html]'" in p.stderr
    assert not (tmp_path / "r.html").exists()


def test_open_hands_the_page_to_the_browser(tmp_path: Path) -> None:
    seen = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {seen}\n', encoding="utf-8")
    script.chmod(0o755)
    out = tmp_path / "r.html"
    env = {**os.environ, "BROWSER": f"{script} %s"}
    p = subprocess.run(
        [sys.executable, "-m", "triage", "logs", str(OOM), "--format", "html", "-o", str(out), "--open"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert seen.read_text() == out.resolve().as_uri()


def test_open_needs_html() -> None:
    assert main(["logs", str(OOM), "--format", "json", "--open"]) == 2


def test_history_page_holds_each_report(tmp_path: Path) -> None:
    from triage.report.html import render_history

    page = render_history([("run 2 (newest)", analyze([str(OOM)])), ("run 1", analyze([str(CUT)]))])
    assert page.count("<article") == 2
    assert page.index("run 2 (newest)") < page.index("run 1")
    assert 'data-chart="timeline"' in page


# -- the data behind the pictures ----------------------------------------------------------
def test_timeline_data_of_the_cascade() -> None:
    r = analyze([str(OOM)])
    by_rank = {s.rank: s for s in r.timeline}
    assert set(by_rank) == {0, 1, 2, 3, 4, 5, 6, 7, None}
    r3 = by_rank[3]
    assert r3.first_error is not None and r3.first_error.line == 45
    assert "OutOfMemoryError" in r3.first_error.text and r3.error_step == 1840
    # the others' first error is their watchdog timeout, after rank 3's
    others = [by_rank[k].first_error for k in (0, 1, 2, 4, 5, 6, 7)]
    assert all(e is not None and e.line is not None and e.line > 45 for e in others)
    assert [p[0] for p in by_rank[1].phases] == ["distributed-init", "training"]
    loss = [s for s in r.series if s.name == "loss"]
    assert [s.rank for s in loss] == list(range(8))
    assert loss[3].points[-1] == (1840.0, 1.263)


def test_gpu_readings_from_a_snapshot() -> None:
    from triage.engine import gpu_readings

    g = gpu_readings(
        {
            "gpu.count": 2,
            "gpu.all.memory_used_mib": [81000, 0],
            "gpu.all.memory_total_mib": [81559, 81559],
            "gpu.names": ["H100", "H100"],
        }
    )
    assert [x.memory_used_mib for x in g] == [81000.0, 0.0]
    assert g[0].utilization_pct is None  # not read: left empty, not zero
    assert gpu_readings({}) == ()


@given(
    st.lists(
        st.one_of(st.floats(-1e6, 1e6), st.sampled_from([math.nan, math.inf])), min_size=1, max_size=5000
    )
)
def test_thinned_series_is_bounded_and_keeps_the_ends(values: list[float]) -> None:
    t = Thinned("step")
    for i, v in enumerate(values):
        t.add(float(i), v)
    s = t.series("loss", 0)
    finite = [(float(i), v) for i, v in enumerate(values) if math.isfinite(v)]
    assert len(s.points) <= 2 * SERIES_POINTS
    assert s.count == len(values)
    assert len(s.nonfinite) == min(len(values) - len(finite), 256)
    if finite:
        assert s.points[0] == finite[0] and s.points[-1] == finite[-1]
        xs = [p[0] for p in s.points]
        assert xs == sorted(xs)
        if len(finite) > 2 * SERIES_POINTS:
            assert len(s.points) >= SERIES_POINTS // 2 - 1  # thinned, never starved
        # a spike or a dip is never thinned away: each bucket keeps its extremes
        assert max(p[1] for p in s.points) == max(v for _x, v in finite)
        assert min(p[1] for p in s.points) == min(v for _x, v in finite)


def test_watch_writes_the_report_when_the_run_ends(tmp_path: Path) -> None:
    from triage.watch.events import Notice
    from triage.watch.session import FileSource, WatchSession

    log = tmp_path / "train.log"
    log.write_bytes(OOM.read_bytes())
    out = tmp_path / "watch.html"
    s = WatchSession(FileSource(log), snapshot=False, report_interval=0, html=out)
    s.start()
    s.poll()
    events = s.stop()
    assert any(isinstance(e, Notice) and str(out) in e.text for e in events)
    page = out.read_text(encoding="utf-8")
    assert 'data-chart="timeline"' in page and "CUDA out of memory" in page


def test_watch_html_goes_beside_a_tmux_capture_only(tmp_path: Path) -> None:
    import argparse

    from triage.cli.watch import html_path

    cap = tmp_path / "train-0.log"
    tmux = argparse.Namespace(html=None, tmux="train", file=None)
    followed = argparse.Namespace(html=None, tmux=None, file=str(cap))
    chosen = argparse.Namespace(html=str(tmp_path / "x.html"), tmux=None, file=str(cap))
    assert html_path(tmux, cap) == tmp_path / "train-0.log.html"
    assert html_path(followed, cap) is None  # the user's own file: nothing written beside it
    assert html_path(chosen, cap) == tmp_path / "x.html"


def test_only_the_chart_module_imports_matplotlib() -> None:
    code = "import sys, triage.report.html, triage.cli\nprint('matplotlib' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    users = [
        p.name
        for p in (ROOT / "triage").rglob("*.py")
        if re.search(r"^\s*(?:import|from) matplotlib", p.read_text(encoding="utf-8"), re.M)
    ]
    assert users == ["charts.py"]


def test_timestamped_ranks_are_drawn_against_time() -> None:
    from triage.engine import analyze_text
    from triage.report import charts

    lines = [
        f"[rank{r}]: [2024-09-03 14:58:{s * 2 + r:02d}] step={s} loss={2.0 - s / 10:.2f}"
        for s in range(1, 6)
        for r in range(2)
    ]
    lines.append(
        "[rank1]: [2024-09-03 14:58:20] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB"
    )
    r = analyze_text("\n".join(lines) + "\n")
    assert [(s.rank, s.first_ts is not None, s.last_ts is not None) for s in r.timeline] == [
        (0, True, True),
        (1, True, True),
    ]
    steps = [s for s in r.series if s.name == "step_time_s"]
    assert [s.rank for s in steps] == [0, 1] and all(p[1] == 2.0 for p in steps[0].points)
    svg = charts.timeline(r.timeline, first_failed=(r.timeline[1].source, 1))
    assert "seconds since the first line" in svg and 'id="marker-first"' in svg
