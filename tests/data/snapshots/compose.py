"""Compose the GPU-state snapshots in this folder (`python compose.py` rewrites them).

No GPU machine was available when these were made, so they are composed, not
recorded: the layout is exactly what triage/evidence/collect.py writes (checked
against a real `triage snapshot` on a machine without a GPU), and the values are
those NVML reports for the named hardware (H100 80GB HBM3: 81559 MiB, compute
capability 9.0). Kernel lines follow the NVRM Xid format and the Linux OOM killer's
messages (shared/reference/messages.md section 12; mm/oom_kill.c). Each file says so
in its "note".
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NOTE = (
    "composed by tests/data/snapshots/compose.py (no GPU machine was available): "
    "collect.py's layout with NVML values typical of {what}"
)
PKGS_ABSENT = [
    "triton",
    "flash-attn",
    "xformers",
    "bitsandbytes",
    "deepspeed",
    "peft",
    "trl",
    "datasets",
    "torchvision",
    "apex",
]


def python(venv: str) -> dict[str, Any]:
    return {
        "version": "3.11.9",
        "executable": f"{venv}/bin/python",
        "prefix": venv,
        "base_prefix": "/usr",
        "venv": True,
        "implementation": "cpython",
        "platform": "linux",
    }


def packages(
    torch: str, transformers: str, accelerate: str | None, triton: str | None = "3.5.0"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Installed versions and import results, as the probe writes them."""
    venv_site = "/root/venv/lib/python3.11/site-packages"
    vers: dict[str, Any] = {
        "torch": torch,
        "transformers": transformers,
        "accelerate": accelerate,
        "safetensors": "0.6.2",
        "numpy": "2.3.4",
        "tokenizers": "0.22.1",
        "huggingface-hub": "1.1.2",
        "nvidia-ml-py": None,
    }
    for p in PKGS_ABSENT:
        vers[p] = None
    vers["triton"] = triton
    imports: dict[str, Any] = {}
    for name, ver in vers.items():
        mod = name.replace("-", "_").replace("huggingface_hub", "huggingface_hub")
        if ver is None:
            imports[name] = {
                "ok": False,
                "error": f"ModuleNotFoundError: No module named '{mod}'",
                "seconds": 0.0,
            }
        else:
            imports[name] = {
                "ok": True,
                "seconds": 0.4,
                "version": ver,
                "file": f"{venv_site}/{mod}/__init__.py",
            }
    return vers, imports


def torch_build(
    version: str, cuda: str, cuda_available: bool = True, warning: str | None = None, devices: int = 8
) -> dict[str, Any]:
    t: dict[str, Any] = {
        "installed": True,
        "version": version,
        "cuda": cuda,
        "hip": None,
        "git": "0" * 40,
        "cudnn": 91002,
        "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"],
        "cuda_available": cuda_available,
        "device_count": devices if cuda_available else 0,
    }
    if warning:
        t["cuda_init_warning"] = warning
    return t


def device(
    i: int, used: int, util: int, procs: list[dict[str, Any]] | None = None, **over: Any
) -> dict[str, Any]:
    d: dict[str, Any] = {
        "index": i,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": f"GPU-6f0c3b1e-2a7d-4c1b-9e0f-00000000000{i}",
        "pci_bus_id": f"00000000:{['18', '2A', '3A', '5D', '9A', 'AB', 'BA', 'DB'][i]}:00.0",
        "cuda_capability": "9.0",
        "memory_used_mib": used,
        "memory_total_mib": 81559,
        "utilization_pct": util,
        "memory_utilization_pct": util // 2,
        "temperature_c": 64 if util else 33,
        "power_w": 612.4 if util else 71.8,
        "power_limit_w": 700.0,
        "ecc_uncorrected": 0,
        "ecc_uncorrected_aggregate": 0,
        "retired_pages": {"unknown": "Not Supported"},
        "retired_pages_pending": {"unknown": "Not Supported"},
        "remapped_rows_uncorrectable": 0,
        "remapped_rows_pending": False,
        "remapped_rows_failed": False,
        "throttle_reasons": [] if util else ["gpu_idle"],
        "processes": procs or [],
        "lost": False,
    }
    d.update(over)
    return d


def gpus(devs: list[dict[str, Any]], driver: str = "570.172.08", cuda: str = "12.8") -> dict[str, Any]:
    return {
        "source": "nvml",
        "driver_version": driver,
        "cuda_driver_version": cuda,
        "nvml_version": f"12.{driver}",
        "devices": devs,
    }


def kernel(
    xid: list[dict[str, Any]] | None = None,
    oom: list[dict[str, Any]] | None = None,
    fell: list[str] | None = None,
) -> dict[str, Any]:
    xid, oom = xid or [], oom or []
    return {
        "readable": True,
        "source": "dmesg",
        "lines": 2817,
        "xid": xid,
        "xid_total": len(xid),
        "fallen_off_bus": fell or [],
        "oom_killer": oom,
        "oom_killer_total": len(oom),
    }


KERNEL_UNREADABLE = {
    "readable": False,
    "reason": (
        "dmesg: dmesg: read kernel buffer failed: Operation not permitted; /dev/kmsg: Operation not "
        "permitted; journalctl -k: no entries (no journal, or no permission to read it)"
    ),
}


def base(
    what: str,
    venv: str = "/root/venv",
    torch: str = "2.11.0+cu128",
    cuda: str = "12.8",
    accelerate: str | None = "1.13.0",
    transformers: str = "5.3.0",
) -> dict[str, Any]:
    vers, imports = packages(torch, transformers, accelerate)
    return {
        "schema": "triage.snapshot/1",
        "note": NOTE.format(what=what),
        "host": "gpu-node-17",
        "time": "2026-11-29T13:07:40+00:00",
        "collector": {"triage": "0.1.0", "python": "/usr/local/bin/python3"},
        "python": python(venv),
        "packages": vers,
        "imports": imports,
        "torch": torch_build(torch, cuda),
        "transformers": {"accelerate_min_version": "1.1.0"},
        "probe": {"complete": True, "seconds": 6.1},
        "env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
        "inductor_cache": {
            "path": "/tmp/torchinductor_root",
            "origin": "default",
            "exists": True,
            "subdirs": ["aotautograd", "fxgraph", "triton"],
            "entries": 1284,
            "size_bytes": 412_338_112,
            "newest": "2026-11-28T22:41:09+00:00",
        },
        "gpus": gpus([device(i, 0, 0) for i in range(8)]),
        "kernel": kernel(),
        "host_memory": {"total_mib": 2_063_541, "available_mib": 1_987_004, "swap_free_mib": 0},
        "cgroup": {"path": "/sys/fs/cgroup", "memory_max_mib": None, "oom_kill": 0, "oom": 0},
        "collect_seconds": 7.4,
    }


def busy_proc(pid: int, mib: int) -> list[dict[str, Any]]:
    return [{"pid": pid, "memory_mib": mib, "name": "python"}]


def xid_line(code: int, pci: str, msg: str, pid: int | None = 48211) -> dict[str, Any]:
    who = f"pid={pid}, name=python, " if pid else ""
    text = f"[2026-11-29T13:02:11,482113+00:00] NVRM: Xid (PCI:{pci}): {code}, {who}{msg}"
    d: dict[str, Any] = {"code": code, "pci": pci, "message": msg, "text": text}
    if pid:
        d.update(pid=pid, process="python")
    return d


def compose() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}

    s = base("a healthy 8x H100 node mid-training")
    s["gpus"] = gpus(
        [device(i, 72_913 + 37 * i, 97 + (i % 3), busy_proc(51200 + i, 72_400)) for i in range(8)]
    )
    out["healthy-8gpu"] = s

    s = base("an 8x H100 node minutes after the run crashed: every GPU empty")
    out["crashed-all-idle"] = s

    s = base("an 8x H100 node after an uncorrectable (contained) memory error on GPU 5")
    devs = [device(i, 0, 0) for i in range(8)]
    devs[5] = device(
        5,
        0,
        0,
        ecc_uncorrected=2,
        ecc_uncorrected_aggregate=2,
        remapped_rows_uncorrectable=1,
        remapped_rows_pending=True,
    )
    s["gpus"] = gpus(devs)
    s["kernel"] = kernel(
        xid=[
            xid_line(94, "0000:ab:00", "Contained: SM (0x1). RST: No, D-RST: No"),
            xid_line(
                63,
                "0000:ab:00",
                "Row Remapper: New row (0x00000000000a1b2c) marked for remapping, reset gpu to activate.",
                None,
            ),
        ]
    )
    out["ecc-uncorrectable"] = s

    s = base("an 8x H100 node whose GPU 3 fell off the bus (Xid 79)")
    devs = [device(i, 0, 0) for i in range(8)]
    lost = {"unknown": "GPU is lost"}
    devs[3] = {
        "index": 3,
        "error": "GPU is lost",
        "lost": True,
        "memory_used_mib": lost,
        "memory_total_mib": lost,
        "utilization_pct": lost,
        "ecc_uncorrected": lost,
    }
    s["gpus"] = gpus(devs)
    s["kernel"] = kernel(
        xid=[
            xid_line(79, "0000:5d:00", "GPU has fallen off the bus."),
            xid_line(
                154,
                "0000:5d:00",
                "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
                None,
            ),
        ]
    )
    out["xid79"] = s

    s = base(
        "an 8x H100 node where GPU 3 still holds memory (a rank spinning in a collective) "
        "while the other seven are empty"
    )
    devs = [device(i, 0, 0) for i in range(8)]
    devs[3] = device(3, 71_204, 100, busy_proc(51203, 70_690))
    s["gpus"] = gpus(devs)
    out["one-busy"] = s

    s = base("an 8x H100 node after the host OOM killer ended a rank")
    s["kernel"] = kernel(
        oom=[
            {
                "text": "[2026-11-29T13:02:10,993211+00:00] python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"
            },
            {
                "text": "[2026-11-29T13:02:11,102394+00:00] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/user.slice/user-0.slice/session-3.scope,task=python,pid=48211,uid=0"
            },
            {
                "text": "[2026-11-29T13:02:11,102402+00:00] Out of memory: Killed process 48211 (python) total-vm:612345678kB, anon-rss:498765432kB, file-rss:81234kB, shmem-rss:1024kB, UID:0 pgtables:981234kB oom_score_adj:0",
                "pid": 48211,
                "process": "python",
            },
        ]
    )
    out["host-oom"] = s

    s = base(
        "an 8x H100 node on driver 570 (CUDA 12.8) with a torch cu130 wheel installed",
        torch="2.11.0+cu130",
        cuda="13.0",
    )
    s["torch"] = torch_build(
        "2.11.0+cu130",
        "13.0",
        cuda_available=False,
        warning=(
            "CUDA initialization: The NVIDIA driver on your system is too old (found version "
            "12080). Please update your GPU driver by downloading and installing a new "
            "version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, "
            "go to: https://pytorch.org to install a PyTorch version that has been compiled "
            "with your version of the CUDA driver. (Triggered internally at "
            "/pytorch/c10/cuda/CUDAFunctions.cpp:119.)"
        ),
    )
    out["cuda-mismatch"] = s

    # The story (shared DESIGN.md): the relaunched venv, torch cu130 on a CUDA 13.0 driver,
    # the inductor cache deleted, all GPUs empty, kernel log not readable by the user.
    story = base(
        "the story's node after the crash: 8 empty H100s, the venv /root/venv",
        torch="2.11.0+cu130",
        cuda="13.0",
        accelerate=None,
        transformers="5.3.0",
    )
    story["gpus"] = gpus([device(i, 0, 0) for i in range(8)], driver="580.82.07", cuda="13.0")
    story["inductor_cache"] = {
        "path": "/tmp/torchinductor_root",
        "origin": "default",
        "exists": False,
        "entries": 0,
        "size_bytes": 0,
        "newest": None,
    }
    story["kernel"] = copy.deepcopy(KERNEL_UNREADABLE)
    story["cgroup"] = {
        "path": "/sys/fs/cgroup",
        "memory_max_mib": {"unknown": "memory.max: No such file or directory"},
        "oom_kill": {"unknown": "memory.events: No such file or directory"},
    }
    out["venv-no-accelerate"] = story

    s = copy.deepcopy(story)
    s["note"] = NOTE.format(what="the story's node after accelerate 1.13.0 was installed into /root/venv")
    vers, imports = packages("2.11.0+cu130", "5.3.0", "1.13.0")
    s["packages"], s["imports"] = vers, imports
    out["venv-accelerate-1.13"] = s

    s = copy.deepcopy(story)
    s["note"] = NOTE.format(what="a venv where accelerate 1.13.0 is installed but fails to import")
    vers, imports = packages("2.11.0+cu130", "5.3.0", "1.13.0")
    # accelerate imports yaml at module level (checked on accelerate 1.15): pyyaml missing
    imports["accelerate"] = {
        "ok": False,
        "seconds": 0.7,
        "error": "ModuleNotFoundError: No module named 'yaml'",
    }
    s["packages"], s["imports"] = vers, imports
    out["venv-accelerate-broken"] = s
    return out


def main() -> None:
    for name, snap in compose().items():
        (HERE / f"{name}.json").write_text(json.dumps(snap, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
