#!/usr/bin/env bash
# The one prepared GPU check of the graph backend (issue 31), at most 7 minutes on an H100/H200
# (the step limits below add up to 420 s):
#   1. versions (GPU, driver, cupy, cuda-bindings, NVRTC, torch, jax);
#   2. calibration microbenchmarks (benchmarks/gpu_calibrate.py: us per graph node, per WHILE
#      iteration, the set-condition kernel as cubin, the cuBLAS shim inside a WHILE body);
#   3. the GPU tests (tests/test_gpu.py: its op-by-op comparison and the graph-mode tests:
#      conditional nodes, the cuBLAS shim, device stacks, fused kernels, Philox draws equal to
#      the Python backend's, a while gradient reading no error word);
#   4. benchmarks/bench_gpu.py --quick: d2s python, d2s graph, torch eager,
#      torch.compile(mode="reduce-overhead"), jax.jit, in one process.
# Writes logs and JSON to $OUT (or the first argument; default ./gpu_check_out). Each step has
# its own time limit and the next steps run even when one fails; without a GPU it stops at once
# with status 2.
#
#   bash benchmarks/gpu_check.sh [OUT]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-gpu_check_out}}
mkdir -p "$OUT"
export PYTHONPATH="$PWD:$PWD/runtime${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python}
status=0

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to $OUT/NAME.log
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    echo "== $name (limit ${limit}s)"
    timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    tail -n 40 "$OUT/$name.log"
    echo "== $name: exit $rc after $((SECONDS - t0)) s"
    [ $rc -eq 0 ] || status=1
}

if ! timeout 30 "$PY" -c "import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)" \
        > "$OUT/probe.log" 2>&1; then
    echo "gpu_check: no usable GPU here (cupy and a CUDA device are needed):"
    tail -n 3 "$OUT/probe.log"
    exit 2
fi

step versions 30 "$PY" benchmarks/gpu_calibrate.py --versions
step calibration 75 "$PY" benchmarks/gpu_calibrate.py --out "$OUT/calibration.json"
step tests 165 "$PY" -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "graph or matches_cpu"
step bench 120 "$PY" benchmarks/bench_gpu.py --quick --json "$OUT/bench.json"
exit $status
