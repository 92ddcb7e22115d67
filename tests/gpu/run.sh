#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The checks that need the GPU machine, as one command (the device tool runs it from the
# repository root, with $OUT as the folder whose files come back):
#   1. the machine: GPU, driver, torch, nvcc, compilers;
#   2. Loom built against that machine's torch (2.x from pip; loom_torch's torch_compat.h is
#      what differs from Debian's 1.13) and its CUDA kernels;
#   3. meson suite `torch` on CPU tensors: our pytest suite, PyTorch's own suite subset at
#      world sizes 2 and 3, and the install check;
#   4. the CUDA reduction kernels against the host kernels, bit for bit (cuda_reduce_check).
# Every step runs even when an earlier one failed; each step's outcome and the tail of its
# output go to $OUT/gpu-results.md (commit it as docs/gpu-results.md), the whole log to
# $OUT/gpu-log.txt. Exit status: the number of failed steps.
#
#   OUT=/tmp/gpu tests/gpu/run.sh         # PYTHON=..., BUILD=... override the defaults
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
PYTHON=${PYTHON:-$(command -v python3)}
BUILD=${BUILD:-build-gpu}
JOBS=$(nproc)
mkdir -p "$OUT"
RESULTS=$OUT/gpu-results.md
LOG=$OUT/gpu-log.txt
: >"$LOG"
export PYTHONUNBUFFERED=1
failed=0

{
  echo "# GPU machine results"
  echo
  echo "\`tests/gpu/run.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo
} >"$RESULTS"

# step NAME COMMAND...: runs it, logs everything, records the outcome and the output's tail.
step() {
  local name=$1
  shift
  local started=$SECONDS part=$OUT/step.txt
  echo "=== $name: $*" >>"$LOG"
  "$@" >"$part" 2>&1
  local status=$?
  cat "$part" >>"$LOG"
  local outcome="passed"
  if [ "$status" -ne 0 ]; then
    outcome="FAILED (exit $status)"
    failed=$((failed + 1))
  fi
  {
    echo "## $name: $outcome, $((SECONDS - started)) s"
    echo
    echo '```'
    echo "\$ $*"
    tail -n 40 "$part"
    echo '```'
    echo
  } >>"$RESULTS"
  rm -f "$part"
  return "$status"
}

machine() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())'
  nvcc --version | tail -n 2
  c++ --version | head -n 1
  echo "meson $(meson --version), ninja $(ninja --version), $JOBS cpus"
}

configure() {
  local options=(-Dpython="$PYTHON" -Dtorch=enabled -Dcuda=auto)
  if [ -d "$BUILD/meson-private" ]; then
    meson setup --reconfigure "$BUILD" "${options[@]}"
  else
    meson setup "$BUILD" --buildtype=release "${options[@]}"
  fi
}

torch_suite() {
  LOOM_SOCKET_IFNAME=lo meson test -C "$BUILD" --suite torch --no-rebuild --print-errorlogs
}

cuda_kernels() {
  if ! ninja -C "$BUILD" -t targets all | grep -q '^src/kernels/cuda_reduce_check:'; then
    echo "cuda_reduce_check is not defined: the build found no CUDA (see the configure step)"
    return 1
  fi
  ninja -C "$BUILD" src/kernels/cuda_reduce_check && "$BUILD/src/kernels/cuda_reduce_check"
}

step "Machine" machine
step "Configure against this torch" configure
step "Build (release, $JOBS jobs)" ninja -C "$BUILD" -j "$JOBS"
step "meson suite torch (CPU tensors)" torch_suite
step "CUDA reduction kernels against the host's" cuda_kernels
cp "$BUILD/meson-logs/testlog.txt" "$OUT/torch-testlog.txt" 2>/dev/null

{
  echo "## Summary"
  echo
  echo "$failed step(s) failed. The whole log is gpu-log.txt beside this file."
} >>"$RESULTS"
exit "$failed"
