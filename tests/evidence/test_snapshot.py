"""Taking snapshots for real: the probe in other interpreters, `triage snapshot` on this
machine (no GPU; as an unprivileged user, no kernel log), the kernel-line scanner, the
inductor cache, a real tmux pane, and NVML answers turned into values or unknowns."""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import pytest
from _evidence_data import ROOT

from triage.evidence import facts_from_snapshot
from triage.evidence.collect import collect
from triage.evidence.sources.inductor_cache import inductor_cache
from triage.evidence.sources.interpreter import run_probe
from triage.evidence.sources.kernel import scan_kernel_lines
from triage.evidence.sources.nvml import gpus as _nvml
from triage.evidence.sources.packages import probe_args
from triage.evidence.sources.tmux import tmux_pane
from triage.model import Unknown

PROBE = ROOT / "triage" / "evidence" / "probe.py"
SYSTEM_PY = shutil.which("python3", path="/usr/bin:/bin")
TRIAGE = [sys.executable, "-m", "triage"]


def _no_torch(py: str | None) -> bool:
    if not py:
        return False
    return subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0


def test_probe_imports_nothing_of_triage():
    tree = ast.parse(PROBE.read_text(encoding="utf-8"))
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "triage" not in mods


def test_probe_in_this_venv_reports_torch_build_and_imports():
    res = run_probe(sys.executable)
    assert res["probe"]["complete"] is True
    assert res["python"]["executable"]
    import torch

    assert res["packages"]["torch"] == torch.__version__
    assert res["torch"]["version"] == torch.__version__
    assert res["torch"]["cuda"] == torch.version.cuda
    assert res["torch"]["cuda_available"] == torch.cuda.is_available()
    assert isinstance(res["torch"]["arch_list"], list)
    assert res["imports"]["torch"]["ok"] is True
    import transformers

    assert res["transformers"]["accelerate_min_version"]
    assert res["imports"]["transformers"]["version"] == transformers.__version__


@pytest.mark.skipif(not _no_torch(SYSTEM_PY), reason="needs a python3 without torch")
def test_probe_without_torch_still_completes():
    assert SYSTEM_PY is not None
    res = run_probe(SYSTEM_PY)
    assert res["probe"]["complete"] is True
    assert res["torch"]["installed"] is False
    assert res["packages"]["torch"] is None
    assert res["imports"]["torch"]["ok"] is False
    f = facts_from_snapshot({"schema": "triage.snapshot/1", **res})
    assert f["package.torch"] is None
    assert f["imports.accelerate"] is False


@pytest.mark.skipif(SYSTEM_PY is None, reason="needs a second interpreter")
def test_probe_installed_but_broken_package_and_noisy_import(tmp_path, monkeypatch):
    """A real package dir that prints on import and then fails: the version comes from
    its dist-info, the import result says why, and stdout stays pure JSON."""
    site = tmp_path / "site"
    (site / "accelerate").mkdir(parents=True)
    (site / "accelerate" / "__init__.py").write_text(
        "import os\nprint('accelerate banner on stdout')\nos.write(1, b'raw fd1 noise\\n')\n"
        "raise ImportError('cannot import name clear_device_cache')\n"
    )
    dist = site / "accelerate-1.13.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: accelerate\nVersion: 1.13.0\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    assert SYSTEM_PY is not None
    res = run_probe(SYSTEM_PY)
    assert res["probe"]["complete"] is True
    assert res["packages"]["accelerate"] == "1.13.0"
    imp = res["imports"]["accelerate"]
    assert imp["ok"] is False and "clear_device_cache" in imp["error"]
    f = facts_from_snapshot({"schema": "triage.snapshot/1", **res})
    assert f["installed.accelerate"] == "1.13.0"
    assert f["package.accelerate"] is None  # installed, but not importable
    assert f["import_error.accelerate"].startswith("ImportError")
    # the probe's own stdout held only JSON despite the noise
    out = subprocess.run(
        [SYSTEM_PY, "-c", PROBE.read_text(), *probe_args()],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(site)),
    )
    json.loads(out.stdout)
    assert "banner" in out.stderr and "raw fd1 noise" in out.stderr


def test_probe_of_a_missing_interpreter_is_unknown_not_an_exception(tmp_path):
    res = run_probe(str(tmp_path / "nope" / "python"))
    assert res["probe"]["complete"] is False
    assert "no such interpreter" in res["python"]["unknown"]
    assert "unknown" in res["packages"]


def test_probe_timeout_keeps_what_it_learned(tmp_path, monkeypatch):
    """A package whose import hangs: the probe is killed, what came before survives."""
    site = tmp_path / "site"
    (site / "safetensors").mkdir(parents=True)
    (site / "safetensors" / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    py = SYSTEM_PY or sys.executable
    res = run_probe(py, timeout=4 if py == SYSTEM_PY else 30)
    assert res["probe"]["complete"] is False
    assert "timed out" in res["probe"]["reason"]
    assert "version" in res["python"]  # learned before the hang
    assert "safetensors" not in res.get("imports", {})


def test_collect_on_this_machine_is_complete(tmp_path):
    snap = collect(
        tmux_target="triage-test-no-such-session", env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    )
    assert snap["schema"] == "triage.snapshot/1"
    for key in (
        "host",
        "time",
        "python",
        "packages",
        "imports",
        "torch",
        "inductor_cache",
        "gpus",
        "kernel",
        "host_memory",
        "cgroup",
        "tmux",
    ):
        assert key in snap, key
    json.dumps(snap)  # serialisable as is
    g = snap["gpus"]
    assert ("unknown" in g) or isinstance(g.get("devices"), list)
    k = snap["kernel"]
    assert k["readable"] is True or k["reason"]
    assert "unknown" in snap["tmux"]
    assert snap["inductor_cache"]["exists"] is False
    f = facts_from_snapshot(snap)
    assert f["inductor_cache.cold"] is True
    assert not isinstance(f["python.executable"], Unknown)


def test_inductor_cache_counts_files_and_newest(tmp_path):
    cache = tmp_path / "torchinductor_x"
    (cache / "fxgraph" / "ab").mkdir(parents=True)
    (cache / "fxgraph" / "ab" / "g1").write_bytes(b"x" * 100)
    (cache / "triton").mkdir()
    (cache / "triton" / "k.so").write_bytes(b"y" * 50)
    os.utime(cache / "triton" / "k.so", (1_800_000_000, 1_800_000_000))
    os.utime(cache / "fxgraph" / "ab" / "g1", (1_700_000_000, 1_700_000_000))
    ic = inductor_cache({"TORCHINDUCTOR_CACHE_DIR": str(cache)})
    assert (ic["exists"], ic["entries"], ic["size_bytes"]) == (True, 2, 150)
    assert ic["origin"] == "TORCHINDUCTOR_CACHE_DIR"
    assert ic["newest"].startswith("2027-01-15")
    assert ic["subdirs"] == ["fxgraph", "triton"]
    default = inductor_cache({})
    assert default["origin"] == "default" and "torchinductor_" in default["path"]


KERNEL_LINES = [
    "[2026-11-29T13:02:10,993211+00:00] python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
    "[2026-11-29T13:02:11,102402+00:00] Out of memory: Killed process 48211 (python) total-vm:612345678kB, anon-rss:498765432kB, file-rss:81234kB, shmem-rss:1024kB, UID:0 pgtables:981234kB oom_score_adj:0",
    "[2026-11-29T13:02:11,482113+00:00] NVRM: Xid (PCI:0000:5d:00): 79, pid=51203, name=python, GPU has fallen off the bus.",
    "[2026-11-29T13:02:11,482200+00:00] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.",
    "NVRM: Xid (PCI:0000:9a:00 GPU-I:01 GPU-CI:00): 119, Timeout after 6s of waiting for RPC response from GPU4 GSP!",
    "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
    "[ 12.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.172.08",
]


def test_scan_kernel_lines_reads_xid_and_oom_killer():
    k = scan_kernel_lines(KERNEL_LINES, "dmesg")
    assert k["readable"] is True and k["lines"] == len(KERNEL_LINES)
    assert [x["code"] for x in k["xid"]] == [79, 119]
    assert k["xid"][0]["pci"] == "0000:5d:00" and k["xid"][0]["pid"] == 51203
    assert k["xid"][1]["pci"] == "0000:9a:00" and "pid" not in k["xid"][1]
    assert len(k["fallen_off_bus"]) == 1
    assert len(k["oom_killer"]) == 2
    assert k["oom_killer"][1]["pid"] == 48211 and k["oom_killer"][1]["process"] == "python"
    f = facts_from_snapshot({"schema": "triage.snapshot/1", "kernel": k})
    assert f["kernel.xid"] == [79, 119]
    assert f["kernel.oom_killer"] is True and "python (pid 48211)" in f["kernel.oom_killed"]
    assert f["kernel.fallen_off_bus"] is True
    assert f["kernel.xid_other_hw"] == [119]
    assert "GSP RPC Timeout" in f["kernel.xid_other_text"]


@pytest.mark.skipif(not shutil.which("tmux"), reason="tmux not installed")
def test_tmux_pane_of_a_dead_pane(tmp_path):
    name = f"triage-test-{os.getpid()}"
    sock = str(tmp_path / "tmux.sock")
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    tm = ["tmux", "-S", sock]
    try:
        subprocess.run([*tm, "new-session", "-d", "-s", name, "sleep 30"], check=True, env=env)
        subprocess.run([*tm, "set-option", "-t", name, "remain-on-exit", "on"], check=True, env=env)
        subprocess.run([*tm, "respawn-pane", "-k", "-t", name, "exit 3"], check=True, env=env)
        for _ in range(50):
            # tmux marks the pane dead a moment before it has reaped the exit status
            out = subprocess.run(
                [*tm, "display-message", "-p", "-t", name, "#{pane_dead}:#{pane_dead_status}"],
                capture_output=True,
                text=True,
                env=env,
            ).stdout.strip()
            if out == "1:3":
                break
            subprocess.run(["sleep", "0.1"])
        pane = _tmux_pane_on(sock, name)
        assert pane["pane_dead"] is True
        # tmux 3.3a now and then never records the status of a pane that exits at once
        # (#{pane_dead_time} stays empty); the snapshot must say what tmux says
        told = subprocess.run(
            [*tm, "display-message", "-p", "-t", name, "#{pane_dead_status}"],
            capture_output=True,
            text=True,
            env=env,
        ).stdout.strip()
        assert pane["pane_dead_status"] == (int(told) if told else None)
        if not told:
            return
        assert isinstance(pane["pane_pid"], int)
        assert pane["remain_on_exit"] is True
        f = facts_from_snapshot({"schema": "triage.snapshot/1", "tmux": pane})
        assert f["tmux.pane_dead"] is True and f["tmux.pane_dead_status"] == 3
    finally:
        subprocess.run([*tm, "kill-server"], capture_output=True, env=env)


def _tmux_pane_on(sock: str, target: str) -> dict[str, Any]:
    """tmux_pane against a private server: a `tmux` wrapper that adds -S SOCKET."""
    bindir = Path(sock).parent / "bin"
    bindir.mkdir(exist_ok=True)
    wrapper = bindir / "tmux"
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("tmux")} -S {sock} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{bindir}:{old}"
    try:
        return tmux_pane(target)
    finally:
        os.environ["PATH"] = old


class FakeNVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


class FakeNVML:
    """Just enough of nvidia-ml-py's API, answering like a 2-GPU node whose GPU 1 is
    lost and whose ECC queries are not supported (consumer GPU)."""

    NVMLError = FakeNVMLError
    NVML_TEMPERATURE_GPU = 0
    ERRORS: ClassVar[dict[int, str]] = {3: "Not Supported", 15: "GPU is lost"}

    def __init__(self) -> None:
        self.shut = False

    def nvmlErrorString(self, v: int) -> str:
        return self.ERRORS.get(v, "Unknown Error")

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shut = True

    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"570.172.08"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 12080

    def nvmlSystemGetNVMLVersion(self) -> str:
        return "12.570.172.08"

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        if i == 1:
            raise FakeNVMLError(15)
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return "NVIDIA GeForce RTX 4090"

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return "GPU-0000"

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return type("M", (), {"used": 2048 * 1024 * 1024, "total": 24564 * 1024 * 1024})()

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return type("U", (), {"gpu": 97, "memory": 40})()

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return 71

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return 301234

    def nvmlDeviceGetTotalEccErrors(self, h: int, kind: int, counter: int) -> int:
        raise FakeNVMLError(3)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return 0x4 | 0x40

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        return [type("P", (), {"pid": 4242, "usedGpuMemory": 1900 * 1024 * 1024})()]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: int) -> list[Any]:
        return []


def test_nvml_answers_become_values_or_unknowns():
    nv = FakeNVML()
    g = _nvml(nv)
    assert nv.shut
    assert g["driver_version"] == "570.172.08" and g["cuda_driver_version"] == "12.8"
    d0, d1 = g["devices"]
    assert d0["memory_used_mib"] == 2048 and d0["memory_total_mib"] == 24564
    assert d0["utilization_pct"] == 97 and d0["power_w"] == 301.2
    assert d0["ecc_uncorrected"] == {"unknown": "Not Supported"}
    assert d0["throttle_reasons"] == ["sw_power_cap", "hw_thermal_slowdown"]
    assert d0["processes"][0]["pid"] == 4242 and d0["processes"][0]["memory_mib"] == 1900
    assert "unknown" in d0["pci_bus_id"]  # a call this fake lacks: unknown, not a crash
    assert d1["lost"] is True and d1["memory_used_mib"] == {"unknown": "GPU is lost"}
    f = facts_from_snapshot({"schema": "triage.snapshot/1", "gpus": g})
    assert f["gpu.lost"] == 1 and f["gpu.count"] == 2
    assert f["driver.cuda"] == "12.8"
    assert isinstance(f["gpu.all.memory_used_mib"], Unknown)
    assert f["gpu.busy"] == [0]


def test_nvml_init_failure_is_unknown():
    class NoDriver(FakeNVML):
        def nvmlInit(self) -> None:
            raise FakeNVMLError(9)

    g = _nvml(NoDriver())
    assert "unknown" in g and "NVML" in g["unknown"]


# ------------------------------------------------------------ the CLI, for real


def run_cli(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TRIAGE, *args], capture_output=True, text=True, cwd=ROOT, **kw)


def test_snapshot_cli_writes_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "snap.json"
    py = SYSTEM_PY or sys.executable  # a quick probe: this test is about the file
    p = run_cli("snapshot", "-o", str(out), "--no-kernel", "--python", py)
    assert p.returncode == 0, p.stderr
    snap = json.loads(out.read_text())
    assert snap["schema"] == "triage.snapshot/1"
    assert snap["kernel"] == {"readable": False, "reason": "not collected (--no-kernel)"}
    before = out.read_text()
    p2 = run_cli("snapshot", "-o", str(out), "--no-kernel", "--python", py)
    assert p2.returncode == 2
    assert p2.stderr.count("\n") == 1 and "already exists" in p2.stderr
    assert out.read_text() == before
    p3 = run_cli("snapshot", "-o", str(out), "--no-kernel", "--force", "--python", py)
    assert p3.returncode == 0, p3.stderr
    p4 = run_cli("snapshot", "--python", str(tmp_path / "no-such-python"))
    assert p4.returncode == 2 and "no such interpreter" in p4.stderr
    assert "Traceback" not in p4.stderr


@pytest.mark.skipif(
    not (hasattr(os, "getuid") and os.getuid() == 0 and shutil.which("setpriv")),
    reason="needs root and setpriv to run as an unprivileged user",
)
def test_snapshot_without_permission_or_gpu_is_still_complete():
    """`triage snapshot` as nobody, with another interpreter: GPUs and kernel log are
    unknown with reasons, and the snapshot still works as evidence."""
    restricted = Path("/proc/sys/kernel/dmesg_restrict")
    if not restricted.exists() or restricted.read_text().strip() != "1":
        pytest.skip("dmesg is readable by everyone here")
    d = Path(tempfile.mkdtemp(prefix="triage-snap-"))
    try:
        d.chmod(0o777)
        out = d / "snap.json"
        py = SYSTEM_PY or sys.executable
        cmd = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "triage",
            "snapshot",
            "-o",
            str(out),
            "--python",
            py,
        ]
        env = dict(os.environ, HOME=str(d), TMPDIR=str(d))
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=d, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        snap = json.loads(out.read_text())
        assert snap["kernel"]["readable"] is False
        assert "Operation not permitted" in snap["kernel"]["reason"]
        assert snap["python"]["executable"]
        assert snap["probe"]["complete"] is True
        if "unknown" in snap["gpus"]:
            assert snap["gpus"]["unknown"]
        log = d / "train.log"
        log.write_bytes(b"Loading 5 target models...\nTarget 0 on cuda:0...\nT")
        r = run_cli("logs", str(log), "--evidence", str(out), "--format", "json")
        assert r.returncode == 0, r.stderr
        rep = json.loads(r.stdout)
        assert rep["end_state"]["kind"] == "cut-mid-line"
        # an unreadable kernel log neither confirms nor weakens the OOM guess
        oom = [x for x in rep["diagnoses"] if x["signature"] == "host-oom-killed"]
        assert oom and oom[0]["confidence"] == "possible" and not oom[0]["counter_evidence"]
    finally:
        shutil.rmtree(d, ignore_errors=True)
