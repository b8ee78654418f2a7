#!/usr/bin/env bash
# The device checks, prepared to run once on a lent GPU machine (device tool), within
# about 8 minutes: NVML through nvidia-ml-py, the GPU repro scenarios, and the runtime's
# tok/s and MFU on the `small` preset. Results land in $OUT (or ./gpu-out).
#
#   run: bash bench/gpu_check.sh      (timeout_s ~540, leaving room to rerun once)
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

log "machine"; nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1; head -15 "$OUT/nvidia-smi.txt"
python3 -m venv .venv-gpu && . .venv-gpu/bin/activate
pip install -q torch transformers accelerate nvidia-ml-py 2>&1 | tail -2
pip install -q -e '.[full]' 2>&1 | tail -2
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())" | tee -a "$OUT/summary.txt"

log "snapshot (real NVML)"
timeout 60 triage snapshot -o "$OUT/snapshot.json" --force && python - "$OUT/snapshot.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
s = json.load(open(sys.argv[1]))
g = s.get("gpus", {})
print("driver", g.get("driver_version"), "cuda", g.get("cuda_driver_version"))
for d in g.get("devices", []) if isinstance(g, dict) else []:
    print(d.get("index"), d.get("name"), d.get("memory_used_mib"), "/", d.get("memory_total_mib"), "MiB", d.get("utilization_pct"), "%")
PY

log "repro on cuda"
for sc in cuda-oom flex-threads-cuda; do
  timeout 180 triage repro "$sc" --device cuda --format json --keep "$OUT/repro-$sc" > "$OUT/repro-$sc.json" 2>&1
  echo "$sc rc=$? $(python -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d.get(k) for k in ('reproduced','diagnosed','top','seconds')})" "$OUT/repro-$sc.json" 2>/dev/null)" | tee -a "$OUT/summary.txt"
done

log "runtime: small preset, tok/s and MFU"
timeout 240 python bench/runtime.py --preset small --device cuda --steps 20 --attention flex sdpa 2>&1 | tee "$OUT/runtime.txt" | tail -8 | tee -a "$OUT/summary.txt"
