#!/usr/bin/env bash
# The device checks, prepared to run once on the lent GPU machine as it is: its own
# python3 (torch 2.11 + CUDA 13, transformers, accelerate, rich, regex, nvidia-ml-py),
# this tree on PYTHONPATH, nothing installed and nothing fetched (that machine has no
# network). Each step runs in its own process group under its own budget and the whole
# group is killed when the budget is spent; the budgets plus the kill grace stay under
# 8 minutes. At most 8 files come back, all directly under $OUT (or ./gpu-out).
#
#   run:      bash bench/gpu_check.sh            (device tool: timeout_s 540)
#   dry run:  bash bench/gpu_check.sh --dry-run  (CPU, CI: the plan, its budget, no GPU)
#
# What each line of summary.txt measures:
#   machine      nvidia-smi's view, and torch's version, CUDA build and whether it sees a GPU
#   snapshot     `triage snapshot`: driver, CUDA driver and each GPU read through NVML
#                (nvidia-ml-py), the evidence triage reasons with (the repro steps below
#                skip their own snapshot: this one is the evidence, and it saves time)
#   cuda-oom     `triage repro cuda-oom --device cuda`: the runtime at batch 1024 on the
#                `small` preset really runs out of GPU memory, and triage names cuda-oom
#   race         `triage repro fx-tracing-flag-race --device cuda`: the runtime's story
#                placement (2 target, 3 drafter threads compiling flex_attention forward
#                and backward on a cold cache, 2 batch shapes) on a torch without the
#                compile-session flag: reproduced or not, and the top diagnosis
#   race-fix     the same with `--fix` (--warmup-compile: every batch shape compiled on one
#                thread first): fixed = trained cleanly and triage finds no race
#   runtime      bench/runtime.py, `small` preset on the GPU, sdpa then flex: ms per drafter
#                step, tok/s (batch x padded length per second), TFLOP/s and MFU, with the
#                attention FLOPs counted on what each backend computes (flex: the tiles its
#                BlockMask keeps; sdpa: the dense grid) against the GPU's dense bf16 peak
set -u
DRY=0
case "${1:-}" in
  --dry-run) DRY=1 ;;
  "") ;;
  *) echo "usage: bash bench/gpu_check.sh [--dry-run]" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu-out}
PY=${PYTHON:-python3}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
BUDGET_S=480   # the whole check: 8 minutes
GRACE_S=5      # between SIGTERM and SIGKILL of a step's group
MAX_FILES=8    # what the device tool brings back

# name | seconds | command (run by bash in the repository root, in a new process group)
STEPS=(
  "machine|10|nvidia-smi > \"\$OUT/nvidia-smi.txt\" 2>&1; head -12 \"\$OUT/nvidia-smi.txt\"; \$PY -c 'import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, torch.cuda.is_available())'"
  "snapshot|30|\$PY -m triage snapshot -o \"\$OUT/snapshot.json\" --force && \$PY bench/gpu_summary.py snapshot \"\$OUT/snapshot.json\""
  "cuda-oom|75|\$PY -m triage repro cuda-oom --device cuda --timeout 65 --no-snapshot --format json > \"\$OUT/repro-cuda-oom.json\"; \$PY bench/gpu_summary.py repro \"\$OUT/repro-cuda-oom.json\""
  "race|110|\$PY -m triage repro fx-tracing-flag-race --device cuda --timeout 100 --no-snapshot --format json > \"\$OUT/repro-race.json\"; \$PY bench/gpu_summary.py repro \"\$OUT/repro-race.json\""
  "race-fix|115|\$PY -m triage repro fx-tracing-flag-race --device cuda --fix --timeout 105 --no-snapshot --format json > \"\$OUT/repro-race-fix.json\"; \$PY bench/gpu_summary.py repro \"\$OUT/repro-race-fix.json\""
  "runtime|100|\$PY bench/runtime.py --preset small --device cuda --steps 10 --warmup 2 --attention sdpa flex > \"\$OUT/runtime.txt\" 2>&1; tail -4 \"\$OUT/runtime.txt\""
)
# Every file a step writes under $OUT, and summary.txt.
FILES=(summary.txt nvidia-smi.txt snapshot.json repro-cuda-oom.json repro-race.json
       repro-race-fix.json runtime.txt)

total=0
for s in "${STEPS[@]}"; do
  IFS='|' read -r _ secs _ <<<"$s"
  total=$((total + secs + GRACE_S))
done
if [ "$total" -gt "$BUDGET_S" ] || [ "${#FILES[@]}" -gt "$MAX_FILES" ]; then
  echo "gpu_check: plan over budget: ${total}s of ${BUDGET_S}s, ${#FILES[@]} of $MAX_FILES files" >&2
  exit 1
fi

if [ "$DRY" = 1 ]; then
  # The plan, and that the tree runs from PYTHONPATH with this interpreter, installing
  # nothing: triage lists both scenarios, the benchmark parses its arguments.
  for s in "${STEPS[@]}"; do
    IFS='|' read -r name secs cmd <<<"$s"
    printf 'step %-9s %4ss  %s\n' "$name" "$secs" "$cmd"
  done
  "$PY" -m triage repro --list --json > /dev/null || { echo "gpu_check: triage does not run from the tree" >&2; exit 1; }
  for sc in cuda-oom fx-tracing-flag-race; do
    "$PY" -m triage repro --list --json | grep -q "\"name\": \"$sc\"" || { echo "gpu_check: no scenario $sc" >&2; exit 1; }
  done
  "$PY" bench/runtime.py --help > /dev/null || { echo "gpu_check: bench/runtime.py does not start" >&2; exit 1; }
  "$PY" bench/gpu_summary.py --help > /dev/null || { echo "gpu_check: bench/gpu_summary.py does not start" >&2; exit 1; }
  echo "plan: ${#STEPS[@]} steps, ${total}s of ${BUDGET_S}s with ${GRACE_S}s kill grace each, ${#FILES[@]} of $MAX_FILES files"
  exit 0
fi

mkdir -p "$OUT"
export OUT PY
log() { echo "$*" >> "$OUT/summary.txt"; }

# Run one step's command in a new process group (setsid); when its budget is spent,
# SIGTERM the group, then SIGKILL it. `triage repro` kills its own child's group on
# SIGTERM (its child runs in a session of its own, which a group kill cannot reach).
run_step() {
  local name=$1 secs=$2 cmd=$3 start rc
  start=$(date +%s)
  log "== $name (budget ${secs}s)"
  setsid bash -c "$cmd" >> "$OUT/summary.txt" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [ $(( $(date +%s) - start )) -ge "$secs" ]; then
      kill -TERM -- "-$pid" 2>/dev/null; sleep "$GRACE_S"; kill -KILL -- "-$pid" 2>/dev/null
      log "$name: killed at its ${secs}s budget"
      break
    fi
    sleep 1
  done
  wait "$pid"; rc=$?
  log "$name: rc=$rc in $(( $(date +%s) - start ))s"
}

: > "$OUT/summary.txt"
for s in "${STEPS[@]}"; do
  IFS='|' read -r name secs cmd <<<"$s"
  run_step "$name" "$secs" "$cmd"
done
log "== done in ${SECONDS}s"
cat "$OUT/summary.txt"
