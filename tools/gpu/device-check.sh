#!/usr/bin/env bash
# One GPU check in one call, from the project root on the GPU machine:
#     OUT=... bash tools/gpu/device-check.sh WHEELS_DIR [BUDGET_SECONDS]
# setup (device-setup.sh), device and versions, the smoke script, the `cuda`-marked tests on the
# GPU (8 workers), then the benchmarks (auto-scheduled workloads and the hand kernels vs PyTorch).
# Every step is capped so that the whole stays within BUDGET_SECONDS (default 270); logs and
# JSON go to $OUT. The last lines printed are the summary. STEPS (a space-separated list, default
# "smoke pytest bench_auto bench_inductor bench_hand") picks the steps; "bert" adds a training
# step of examples/bench_bert_layer.py on the GPU (eager vs the cinn_py backend vs Inductor).
set -u
WHEELS=${1:?usage: device-check.sh WHEELS_DIR [BUDGET_SECONDS]}
BUDGET=${2:-270}
STEPS=" ${STEPS:-smoke pytest bench_auto bench_inductor bench_hand} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
export PYTHONUNBUFFERED=1 CINN_PY_CACHE_DIR=/tmp/cinn-cache OMP_NUM_THREADS=4
START=$(date +%s)
SUMMARY=()
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
capped() {  # capped NAME MAX_SECONDS LOGFILE CMD...: run with min(MAX, time left), log to $OUT/LOGFILE
  local name=$1 max=$2 logf=$3; shift 3
  local cap; cap=$(left); (( cap > max )) && cap=$max
  if (( cap < 10 )); then SUMMARY+=("$name: SKIPPED (budget)"); return; fi
  echo "=== [$(( $(date +%s) - START ))s] $name (cap ${cap}s)"
  local t0=$(date +%s)
  timeout --kill-after=5 "$cap" "$@" 2>&1 | tee "$OUT/$logf"
  local rc=${PIPESTATUS[0]}
  SUMMARY+=("$name: rc=$rc in $(( $(date +%s) - t0 ))s")
}
echo "=== setup"
t0=$(date +%s)
. tools/gpu/device-setup.sh "$WHEELS" >"$OUT/setup.log" 2>&1
tail -n 5 "$OUT/setup.log"
SUMMARY+=("setup: $(python3 -c 'import pycuda.driver' >/dev/null 2>&1 && echo ok || echo FAILED) in $(( $(date +%s) - t0 ))s")
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
python3 -c "import sys, torch, numpy; print(sys.version.split()[0], 'torch', torch.__version__, 'numpy', numpy.__version__)"
want smoke && capped smoke 60 smoke.log python3 tools/gpu/smoke.py
PYTEST_PLUGINS=()   # xdist and pytest-timeout where the machine has them
python3 -c "import xdist" 2>/dev/null && PYTEST_PLUGINS+=(-n 8)
python3 -c "import pytest_timeout" 2>/dev/null && PYTEST_PLUGINS+=(--timeout 90)
want pytest && capped "pytest -m cuda" 130 pytest.log python3 -m pytest -q -m cuda tests/ -p no:cacheprovider \
  "${PYTEST_PLUGINS[@]}" -rfEs -W ignore::DeprecationWarning
want bench_auto && capped "bench auto" 110 bench_auto.log python3 -m cinn_py.tools.bench_cuda_auto --repeat 10 \
  --inner 5 --json "$OUT/bench_auto.json"
want bench_inductor && capped "bench inductor" 90 bench_inductor.log python3 -m cinn_py.tools.bench_cuda_auto \
  rmsnorm softmax layernorm bias_gelu --compile --repeat 10 --inner 5 --json "$OUT/bench_inductor.json"
want bench_hand && capped "bench hand" 60 bench_hand.log python3 -m cinn_py.tools.bench_cuda --repeat 20 --no-compile
want bert && capped "bert layer" 150 bert.log python3 examples/bench_bert_layer.py --device cuda --batch 16 \
  --seq 128 --hidden 768 --ffn 3072 --repeat 20
echo "=== summary after $(( $(date +%s) - START ))s"
grep -h -E "^(PASS|FAIL|all smoke|[0-9]+ smoke)" "$OUT/smoke.log" 2>/dev/null | cut -c1-300
tail -n 12 "$OUT/bert.log" 2>/dev/null
tail -n 3 "$OUT/pytest.log" 2>/dev/null
printf '%s\n' "${SUMMARY[@]}"
