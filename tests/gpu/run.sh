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
#   5c. Loom's NCCL library (libnccl.so.2 -> libnccl-loom.so, built in step 2) under an ordinary
#      NCCL program on device buffers (tests/gpu/nccl_device_program.cu, compiled with nvcc
#      against nccl.h and linked with libnccl.so.2; cudaMalloc'd buffers, a cudaStreamCreate'd
#      stream; all-reduce sum/max, all-gather, reduce-scatter, broadcast, reduce, grouped
#      send/recv, all-to-all of float32 and int32, each checked exactly): through Loom with
#      1 rank, then 2 ranks sharing GPU 0 (NVIDIA's NCCL refuses that), then 1 rank through the
#      machine's real NCCL (the pip package's, else /usr/local/cuda/lib64), whose checksum lines
#      must equal Loom's; each run must map exactly one libnccl, the expected one;
#   5d. torch's ProcessGroupNCCL on Loom's libnccl.so.2 (LD_PRELOAD): 2 processes on cuda:0,
#      all-reduce of CUDA tensors checked exactly (tests/gpu/torch_nccl_on_loom.py; skipped
#      without torch or CUDA in torch);
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
# Loom's NCCL library and the libnccl.so.2 link beside it (a custom target of src/nccl).
wanted += [t for t in targets if (t['name'], t['type']) in (('nccl-loom', 'shared library'), ('libnccl.so.2', 'custom'))]
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

# Loom's NCCL library folder (libnccl.so.2 -> libnccl-loom.so), absolute.
loom_nccl_dir() {
  (cd "$BUILD/src/nccl" 2>/dev/null && pwd)
}

# The folder of the machine's real NCCL library (libnccl.so.2): the pip package nvidia.nccl's
# lib/ (the package may be a namespace package: its __path__, not __file__), else the toolkit's
# /usr/local/cuda/lib64. Nothing printed (status 1) when neither has one.
real_nccl_dir() {
  "$PYTHON" - <<'EOF' 2>/dev/null && return 0
import os, sys
import nvidia.nccl as nccl
places = list(getattr(nccl, '__path__', None) or [])
if getattr(nccl, '__file__', None):
    places.append(os.path.dirname(nccl.__file__))
for place in places:
    if os.path.exists(os.path.join(place, 'lib', 'libnccl.so.2')):
        print(os.path.realpath(os.path.join(place, 'lib')))
        sys.exit(0)
sys.exit(1)
EOF
  if [ -e /usr/local/cuda/lib64/libnccl.so.2 ]; then
    (cd /usr/local/cuda/lib64 && pwd -P)
    return 0
  fi
  return 1
}

NCCL_WORK=$BUILD/gpu-nccl
NCCL_PROGRAM=$NCCL_WORK/nccl_device_program

# nvcc compiles tests/gpu/nccl_device_program.cu against nccl.h (the toolkit's, else the pip
# package's) and links it with libnccl.so.2 (the real NCCL's, else Loom's: only the soname is
# recorded, no rpath, so LD_LIBRARY_PATH picks the library at run time).
nccl_program_build() {
  local real include="" libdir status
  mkdir -p "$NCCL_WORK" || return 1
  rm -f "$NCCL_PROGRAM"
  real=$(real_nccl_dir) || real=""
  if [ -e /usr/local/cuda/include/nccl.h ]; then
    include=/usr/local/cuda/include
  elif [ -n "$real" ] && [ -e "$real/../include/nccl.h" ]; then
    include=$(cd "$real/../include" && pwd)
  fi
  if [ -z "$include" ]; then
    echo "no nccl.h: neither /usr/local/cuda/include nor the pip package nvidia.nccl has one"
    return 1
  fi
  libdir=${real:-$(loom_nccl_dir)}
  if [ -z "$libdir" ]; then
    echo "no libnccl.so.2 to link with: no real NCCL found and $BUILD/src/nccl is missing"
    return 1
  fi
  echo "nccl.h from $include ($(grep -m1 -o 'NCCL_VERSION_CODE [0-9]*' "$include/nccl.h")), linked with $libdir/libnccl.so.2"
  echo "nvcc -O2 -std=c++17 -Xcompiler -Wall -o $NCCL_PROGRAM tests/gpu/nccl_device_program.cu -I$include -L$libdir -l:libnccl.so.2 -ldl"
  nvcc -O2 -std=c++17 -Xcompiler -Wall -o "$NCCL_PROGRAM" tests/gpu/nccl_device_program.cu \
    -I"$include" -L"$libdir" -l:libnccl.so.2 -ldl
  status=$?
  [ "$status" -eq 0 ] && readelf -d "$NCCL_PROGRAM" | grep -E 'NEEDED|RPATH|RUNPATH'
  return "$status"
}

# nccl_program_run LABEL LIBDIR NRANKS: runs the device program's NRANKS ranks (each its own
# process, all on GPU 0) with LIBDIR first on LD_LIBRARY_PATH; their output goes to
# $NCCL_WORK/LABEL.txt and to stdout. Fails unless every rank exited 0 and printed exactly one
# libnccl, LIBDIR's libnccl.so.2 (its real path). 77 when every rank skipped (no GPU).
nccl_program_run() {
  local label=$1 libdir=$2 n=$3 r status=0 skipped=0
  local dir out=$NCCL_WORK/$label.txt expect
  if [ ! -x "$NCCL_PROGRAM" ]; then
    echo "$NCCL_PROGRAM was not built (see the compile step)"
    return 1
  fi
  expect=$(readlink -f "$libdir/libnccl.so.2") || expect=""
  if [ -z "$expect" ] || [ ! -e "$expect" ]; then
    echo "no $libdir/libnccl.so.2"
    return 1
  fi
  dir=$(mktemp -d "$NCCL_WORK/$label.XXXXXX") || return 1
  echo "libnccl.so.2: $libdir/libnccl.so.2 -> $expect; $n rank(s) on GPU 0; unique id in $dir"
  local pids=()
  for ((r = 0; r < n; r++)); do
    LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_DEVICE_PROGRAM_TIMEOUT_S=45 \
      "$NCCL_PROGRAM" "$r" "$n" "$dir" >"$dir/rank$r.txt" 2>&1 &
    pids+=("$!")
  done
  for ((r = 0; r < n; r++)); do
    local rc=0
    wait "${pids[r]}" || rc=$?
    if [ "$rc" -eq 77 ]; then
      skipped=$((skipped + 1))
    elif [ "$rc" -ne 0 ]; then
      echo "rank $r exited $rc"
      status=1
    fi
  done
  cat "$dir"/rank*.txt >"$out"
  rm -rf "$dir"
  cat "$out"
  if [ "$skipped" -eq "$n" ]; then
    return 77
  elif [ "$skipped" -gt 0 ]; then
    echo "$skipped of $n ranks skipped, the others did not"
    return 1
  fi
  # Exactly one libnccl per rank, the expected one. NCCL's plugins (libnccl-net*, -tuner*,
  # -profiler*, -env*) are named in the output but not counted.
  for ((r = 0; r < n; r++)); do
    local maps
    maps=$(grep "^rank $r/$n: libnccl: /" "$out" | sed "s|^rank $r/$n: libnccl: ||" |
      grep -Ev '/libnccl-(net|tuner|profiler|env)[^/]*$')
    if [ "$(printf '%s' "$maps" | grep -c .)" -ne 1 ] || [ "$(readlink -f "$maps")" != "$expect" ]; then
      echo "rank $r mapped, as libnccl: ${maps:-nothing}; expected $expect alone"
      status=1
    else
      echo "rank $r mapped $maps alone: the expected library"
    fi
  done
  return "$status"
}

nccl_loom_1() {
  local loom
  loom=$(loom_nccl_dir) || { echo "no $BUILD/src/nccl (see the build step)"; return 1; }
  rm -f "$NCCL_WORK/loom-1.txt"
  LOOM_DEVICE=cuda LOOM_DEBUG=INFO LOOM_DEBUG_SUBSYS=INIT LOOM_SOCKET_IFNAME=lo LOOM_TIMEOUT_MS=20000 \
    nccl_program_run loom-1 "$loom" 1
}

nccl_loom_2() {
  local loom
  loom=$(loom_nccl_dir) || { echo "no $BUILD/src/nccl (see the build step)"; return 1; }
  LOOM_DEVICE=cuda LOOM_DEBUG=INFO LOOM_DEBUG_SUBSYS=INIT LOOM_SOCKET_IFNAME=lo LOOM_TIMEOUT_MS=20000 \
    nccl_program_run loom-2 "$loom" 2
}

# The real NCCL, 1 rank; then its checksum lines against those of Loom's 1-rank run.
nccl_real_1() {
  local real status=0 lines
  if ! real=$(real_nccl_dir); then
    echo "no real NCCL: neither the pip package nvidia.nccl (for $PYTHON) nor /usr/local/cuda/lib64 has libnccl.so.2"
    return 77
  fi
  rm -f "$NCCL_WORK/nccl-1.txt"
  NCCL_DEBUG=VERSION nccl_program_run nccl-1 "$real" 1 || status=$?
  [ "$status" -eq 0 ] || return "$status"
  if ! grep -q ': passed ' "$NCCL_WORK/loom-1.txt" 2>/dev/null; then
    echo "no passing 1-rank run through Loom to compare with (see its step)"
    return 1
  fi
  lines=$(grep -c ': checksum ' "$NCCL_WORK/nccl-1.txt")
  if diff <(grep ': checksum ' "$NCCL_WORK/loom-1.txt") <(grep ': checksum ' "$NCCL_WORK/nccl-1.txt"); then
    echo "the $lines checksum lines of Loom's and NCCL's 1-rank runs are the same"
  else
    echo "the checksum lines differ: '<' Loom's, '>' NCCL's"
    return 1
  fi
}

nccl_torch() {
  local loom
  loom=$(loom_nccl_dir) || { echo "no $BUILD/src/nccl (see the build step)"; return 1; }
  LOOM_DEVICE=cuda LOOM_SOCKET_IFNAME=lo LD_PRELOAD=$loom/libnccl.so.2 \
    LD_LIBRARY_PATH=$loom${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    "$PYTHON" tests/gpu/torch_nccl_on_loom.py --loom-dir "$loom" --timeout 100
}

# step runs each of these in a child bash, under `timeout`.
export -f machine configure targets build packaging_checks kernels staging device_suite torch_suite
export -f loom_nccl_dir real_nccl_dir nccl_program_build nccl_program_run nccl_loom_1 nccl_loom_2 nccl_real_1 nccl_torch
export BUILD PYTHON TORCH JOBS NCCL_WORK NCCL_PROGRAM

step "Machine" 30 20 machine
step "Configure (-Dcuda=enabled)" 90 15 configure
step "Build (libloom, the device programs; $JOBS jobs)" 240 15 build
step "libloom: no CUDA NEEDED, fatbin embedded" 60 20 packaging_checks
step "Device kernels: exactness vs host, 256 MiB float32 sum bandwidth vs copy" 180 40 kernels
step "meson suite device (LOOM_DEVICE=cuda)" 240 40 device_suite
step "Device buffers' all-reduce: host vs whole vs overlapped copies" 120 15 staging
cp "$BUILD/meson-logs/testlog.txt" "$RESULTS_DIR/device-testlog.txt" 2>/dev/null
step "NCCL device program: nvcc against nccl.h, linked with libnccl.so.2" 90 10 nccl_program_build
step "NCCL program on device buffers through Loom's libnccl.so.2 (1 rank)" 60 15 nccl_loom_1
step "NCCL program on device buffers through Loom's libnccl.so.2 (2 ranks sharing GPU 0)" 75 15 nccl_loom_2
step "NCCL program on device buffers through the machine's real NCCL (1 rank)" 60 15 nccl_real_1
step "torch ProcessGroupNCCL on Loom's libnccl.so.2 (LD_PRELOAD, 2 processes, one GPU)" 120 30 nccl_torch
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
