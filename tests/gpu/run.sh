#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The checks that need a GPU machine (H100/H200 with nvcc 13), as one command that finishes in a
# few minutes on 16 cores, build included. The device tool runs it from the repository root with
# $OUT as the folder whose files come back:
#   1. the machine: GPU, driver, nvcc, compilers;
#   2. a release build folder with -Dcuda=enabled, building only what the checks below run:
#      libloom (with its embedded fatbin), the device suite's programs, device_kernel_bandwidth;
#   3. libloom has no CUDA library among its NEEDED entries, and carries a fatbin with sm_80,
#      sm_90, sm_100 and compute_100 PTX (meson tests no_cuda_needed, cuda_fatbin);
#   4. every device kernel against the host kernels, bit for bit, then the 256 MiB float32 sum
#      kernel's bandwidth against a device-to-device copy (perf/device_kernel_bandwidth);
#   5. meson suite `device` with LOOM_DEVICE=cuda, when GoogleTest is installed (else skipped);
#   5b. device buffers' all-reduce over shm: host buffers, whole copies and overlapped copies
#      side by side (perf/device_staging_perf);
#   6. with TORCH=1 only: loom_torch built against this machine's torch and the `torch` suite
#      (a whole build; minutes more).
# Every step runs even when an earlier one failed, under its own time limit. Each step's
# outcome, its time and the tail of its output go to gpu-results.md in $OUT (the current folder
# when $OUT is unset; commit it as docs/gpu-results.md), the whole log to gpu-log.txt beside it.
# Exit status: the number of failed steps.
#
#   OUT=/tmp/gpu tests/gpu/run.sh         # BUILD=..., PYTHON=..., TORCH=1 override the defaults
# shellcheck disable=SC2317  # the step functions run indirectly, through step()
set -u
RESULTS_DIR=${OUT:-$PWD}
cd "$(dirname "$0")/../.." || exit 1
PYTHON=${PYTHON:-$(command -v python3)}
BUILD=${BUILD:-build-gpu}
TORCH=${TORCH:-0}
JOBS=$(nproc)
mkdir -p "$RESULTS_DIR"
RESULTS_DIR=$(cd "$RESULTS_DIR" && pwd)
RESULTS=$RESULTS_DIR/gpu-results.md
LOG=$RESULTS_DIR/gpu-log.txt
: >"$LOG"
export PYTHONUNBUFFERED=1
# The toolkit's usual home, for a machine whose PATH lacks it.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=$PATH:/usr/local/cuda/bin
fi
failed=0
summary=()
started_all=$SECONDS

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
nvcc_version=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*, V[0-9.]*' || echo "no nvcc")
{
  echo "# GPU machine results"
  echo
  echo "\`tests/gpu/run.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo
  echo "- device: ${gpu_name:-no GPU found by nvidia-smi}"
  echo "- nvcc: $nvcc_version"
  echo "- $JOBS CPUs, build folder \`$BUILD\`"
  echo
} >"$RESULTS"

# step NAME LIMIT_S TAIL_LINES COMMAND...: runs it under a time limit, logs everything, records
# the outcome, the time and the last TAIL_LINES lines of its output. A command that exits 77 was
# skipped (its output says why).
step() {
  local name=$1 limit=$2 lines=$3
  shift 3
  local started=$SECONDS part=$RESULTS_DIR/step.txt
  echo "=== $name: $*" >>"$LOG"
  timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" >"$part" 2>&1
  local status=$?
  cat "$part" >>"$LOG"
  local outcome="passed"
  if [ "$status" -eq 77 ]; then
    outcome="skipped"
  elif [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    outcome="FAILED (over its ${limit} s limit)"
    failed=$((failed + 1))
  elif [ "$status" -ne 0 ]; then
    outcome="FAILED (exit $status)"
    failed=$((failed + 1))
  fi
  local seconds=$((SECONDS - started))
  summary+=("| $name | $outcome | $seconds |")
  {
    echo "## $name: $outcome, $seconds s"
    echo
    echo '```'
    echo "\$ $*"
    tail -n "$lines" "$part"
    echo '```'
    echo
  } >>"$RESULTS"
  rm -f "$part"
  return "$status"
}

machine() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv
  nvcc --version | tail -n 2
  c++ --version | head -n 1
  echo "meson $(meson --version), ninja $(ninja --version), $JOBS cpus, python $("$PYTHON" --version 2>&1)"
}

configure() {
  local options=(--buildtype=release -Dcuda=enabled -Dlibrary_lto=false -Dpython="$PYTHON")
  if [ "$TORCH" = 1 ]; then options+=(-Dtorch=enabled); else options+=(-Dtorch=disabled); fi
  if [ -d "$BUILD/meson-private" ]; then
    meson setup --reconfigure "$BUILD" "${options[@]}"
  else
    meson setup "$BUILD" "${options[@]}"
  fi
}

# The ninja targets of libloom, device_kernel_bandwidth, loomrun and every test of the device
# suite and of the two packaging checks (what they run and depend on), from meson's introspection.
targets() {
  "$PYTHON" - "$BUILD" <<'EOF'
import json, os, subprocess, sys
build = os.path.abspath(sys.argv[1])
def introspect(what):
    done = subprocess.run(['meson', 'introspect', '--' + what, build], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)
targets = introspect('targets')
by_id = {t['id']: t for t in targets}
# loomrun: the device suite's multi-process tests start their ranks with it.
wanted = [t for t in targets if t['name'] in ('loom', 'device_kernel_bandwidth', 'device_staging_perf', 'loomrun')
          and t['type'] in ('shared library', 'executable')]
for test in introspect('tests'):
    if 'loom:device' in test['suite'] or test['name'] in ('no_cuda_needed', 'cuda_fatbin'):
        wanted += [by_id[i] for i in test.get('depends', []) if i in by_id]
names = sorted({os.path.relpath(f, build) for t in wanted for f in t['filename']})
print(' '.join(names))
EOF
}

build() {
  local wanted
  wanted=$(targets) || return 1
  echo "targets: $wanted"
  # shellcheck disable=SC2086  # a list of target names without spaces
  ninja -C "$BUILD" -j "$JOBS" $wanted
}

packaging_checks() {
  local status=0
  meson test -C "$BUILD" --no-rebuild --print-errorlogs no_cuda_needed cuda_fatbin || status=$?
  grep -E '^(PASS |FAIL |SKIP: |cuobjdump|.*\.fatbin: [0-9]+ bytes)' "$BUILD/meson-logs/testlog.txt"
  return "$status"
}

kernels() {
  LOOM_DEVICE=cuda "$BUILD/perf/device_kernel_bandwidth"
}

staging() {
  LOOM_DEVICE=cuda "$BUILD/perf/device_staging_perf" --ranks=2 --mib=1,16,64,256 --reps=5 --iters=5
}

device_suite() {
  if ! meson test -C "$BUILD" --list --no-rebuild 2>/dev/null | grep -q '^loom:device / '; then
    echo "no device suite: GoogleTest was not found when $BUILD was configured (apt-get install libgtest-dev)"
    return 77
  fi
  LOOM_DEVICE=cuda LOOM_SOCKET_IFNAME=lo meson test -C "$BUILD" --suite device --no-rebuild --print-errorlogs
}

torch_suite() {
  ninja -C "$BUILD" -j "$JOBS" &&
    LOOM_SOCKET_IFNAME=lo meson test -C "$BUILD" --suite torch --no-rebuild --print-errorlogs
}

# step runs each of these in a child bash, under `timeout`.
export -f machine configure targets build packaging_checks kernels staging device_suite torch_suite
export BUILD PYTHON TORCH JOBS

step "Machine" 30 20 machine
step "Configure (-Dcuda=enabled)" 90 15 configure
step "Build (libloom, the device programs; $JOBS jobs)" 240 15 build
step "libloom: no CUDA NEEDED, fatbin embedded" 60 20 packaging_checks
step "Device kernels: exactness vs host, 256 MiB float32 sum bandwidth vs copy" 180 40 kernels
step "meson suite device (LOOM_DEVICE=cuda)" 240 40 device_suite
step "Device buffers' all-reduce: host vs whole vs overlapped copies" 120 15 staging
cp "$BUILD/meson-logs/testlog.txt" "$RESULTS_DIR/device-testlog.txt" 2>/dev/null
if [ "$TORCH" = 1 ]; then
  step "meson suite torch (CPU tensors)" 600 40 torch_suite
fi

{
  echo "## Summary"
  echo
  echo "| step | outcome | seconds |"
  echo "|---|---|---:|"
  printf '%s\n' "${summary[@]}"
  echo
  echo "$failed step(s) failed, $((SECONDS - started_all)) s in all. The whole log is gpu-log.txt beside this file."
} >>"$RESULTS"
exit "$failed"
