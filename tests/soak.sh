#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Full-length soak: the soak tests (tests/mp/test_soak.cc, in the mp suite's program) with
# 10,000 random collectives on 4 ranks over the default transport (then a third as many over
# TCP), every result checked. Builds nothing.
#   tests/soak.sh [path/to/test_mp [gtest flags...]]     (default: build/tests/test_mp)
# LOOM_SOAK_ITERATIONS overrides the length, LOOM_SOAK_SEED=0x... replays a printed seed.
set -uo pipefail
exe=${1:-$(dirname "$0")/../build/tests/test_mp}
shift $(($# > 0 ? 1 : 0))
if [ ! -x "$exe" ]; then
  echo "soak: $exe is not an executable (build it first: ninja -C build tests/test_mp)" >&2
  exit 2
fi
export LOOM_SOAK_ITERATIONS=${LOOM_SOAK_ITERATIONS:-10000}
export LOOM_SOCKET_IFNAME=${LOOM_SOCKET_IFNAME:-lo}
start=$(date +%s%N)
"$exe" --test-file=mp/test_soak.cc "$@"
status=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
printf 'soak: LOOM_SOAK_ITERATIONS=%s, %d.%03d s elapsed, %s\n' "$LOOM_SOAK_ITERATIONS" \
  $((elapsed_ms / 1000)) $((elapsed_ms % 1000)) "$([ $status -eq 0 ] && echo passed || echo "FAILED (exit $status)")"
exit $status
