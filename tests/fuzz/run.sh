#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds Loom's libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and runs each for
# SECONDS (default 30) on a scratch copy of its seed corpus (plus its saved regressions).
# Prints "fuzz <target>: N runs, ok" or "fuzz <target>: N runs, CRASH <file>" per target and
# exits non-zero if any target found something. Needs Debian's clang and libclang-rt-14-dev.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
#   tests/fuzz/run.sh --build-only      (builds the targets and stops: .ci/run builds them early)
# The build uses every core, and the targets run side by side, one per core (each still for
# SECONDS): on 2 cores the four targets take two rounds of SECONDS, not four.
#   FUZZ_BUILD=dir   build folder (default <repo>/build-fuzz)
#   FUZZ_JOBS=n      ninja -j and targets at a time (default: the cores, nproc)
#   FUZZ_SOURCE=dir  the Loom tree whose code is fuzzed (default this repository)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
seconds=${1:-30}
shift $(($# > 0 ? 1 : 0))
targets=("$@")
((${#targets[@]})) || targets=(unique_id bootstrap_wire transport_wire topology_xml)
build=${FUZZ_BUILD:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}
source_root=${FUZZ_SOURCE:-$root}

cxx=${FUZZ_CXX:-clang++}
command -v "$cxx" >/dev/null || { echo "fuzz: $cxx not found (apt-get install clang libclang-rt-14-dev)"; exit 2; }
command -v ninja >/dev/null || { echo "fuzz: ninja not found (apt-get install ninja-build)"; exit 2; }
mkdir -p "$build"

# loom_config.h normally comes from meson; the fuzzed code needs none of the optional features.
config="$build/loom_config.h"
want='#pragma once
#define LOOM_HAVE_CUDA 0
#define LOOM_HAVE_HWLOC 0
#define LOOM_HAVE_IBVERBS 0
#define LOOM_HAVE_UCX 0'
[ "$(cat "$config" 2>/dev/null)" = "$want" ] || printf '%s\n' "$want" >"$config"

# The Loom sources the targets reach: whole folders (every .cc of each), so a file added to one
# of them is fuzzed with it instead of breaking the link (compiled once, shared by every target).
loom_folders=(src/base src/base/net src/bootstrap src/transport src/transport/socket src/topology)
loom_sources=()
for folder in "${loom_folders[@]}"; do
  for file in "$source_root/$folder"/*.cc; do loom_sources+=("${file#"$source_root/"}"); done
done
# One unity file a folder, which includes the folder's sources (as the sanitizer builds' unity
# files do a layer's): the build took 116 CPU-seconds with one object a source, 61 s so.
unity_files=()
mkdir -p "$build/unity"
for folder in "${loom_folders[@]}"; do
  unity="$build/unity/${folder//\//_}.cc"
  {
    for source in "${loom_sources[@]}"; do
      [ "$(dirname "$source")" = "$folder" ] && echo "#include \"$source_root/$source\""
    done
  } >"$unity.new"
  cmp -s "$unity.new" "$unity" && rm -f "$unity.new" || mv "$unity.new" "$unity"
  unity_files+=("$unity")
done
# A folder's *.cc.in templates are written by meson (configure_file or vcs_tag); here each is
# written into the build folder with every @PLACEHOLDER@ as "fuzz" (the version text, today).
generated_sources=()
for folder in "${loom_folders[@]}"; do
  for template in "$source_root/$folder"/*.cc.in; do
    [ -e "$template" ] || continue
    name="${template#"$source_root/"}"
    output="$build/generated/${name%.in}"
    mkdir -p "$(dirname "$output")"
    sed 's/@[A-Z_]*@/fuzz/g' "$template" >"$output.new"
    cmp -s "$output.new" "$output" && rm -f "$output.new" || mv "$output.new" "$output"
    generated_sources+=("$output")
  done
done
target_sources=(unique_id_target.cc bootstrap_wire_target.cc transport_wire_target.cc
                topology_xml_target.cc)
declare -A entry=([unique_id]=uniqueIdOneInput [bootstrap_wire]=bootstrapWireOneInput
                  [transport_wire]=transportWireOneInput [topology_xml]=topologyXmlOneInput)

# A generated ninja file gives correct incremental rebuilds (header dependencies included).
# Library headers are spelled from src/ ("base/error.h"), test headers from the root.
flags="-std=c++20 -g -O1 -D_GNU_SOURCE -I$source_root/src -I$source_root -I$source_root/include -I$build -Wall -Wextra"
flags+=" -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
{
  echo "cxx = $cxx"
  echo "flags = $flags"
  echo "rule cxx"
  echo "  command = \$cxx \$flags \$extra -MD -MF \$out.d -c \$in -o \$out"
  echo "  depfile = \$out.d"
  echo "  deps = gcc"
  echo "  description = CXX \$out"
  echo "rule link"
  echo "  command = \$cxx \$flags -fsanitize=fuzzer \$in -o \$out -lpthread"
  echo "  description = LINK \$out"
  objects=()
  for unity in "${unity_files[@]}"; do
    object="obj/$(basename "$unity" .cc).o"
    echo "build $object: cxx $unity"
    echo "  extra = -fsanitize=fuzzer-no-link"  # warnings: g++ -Werror guards Loom's own code
    objects+=("$object")
  done
  for source in "${generated_sources[@]}"; do
    object="obj/generated_$(basename "$source").o"
    echo "build $object: cxx $source"
    echo "  extra = -fsanitize=fuzzer-no-link"
    objects+=("$object")
  done
  for source in "${target_sources[@]}"; do
    object="obj/tests_fuzz_${source%.cc}.o"
    echo "build $object: cxx $here/$source"
    echo "  extra = -fsanitize=fuzzer-no-link -Werror"
    objects+=("$object")
  done
  for target in "${!entry[@]}"; do
    echo "build obj/main_$target.o: cxx $here/libfuzzer_main.cc"
    echo "  extra = -Werror -DLOOM_FUZZ_ENTRY=${entry[$target]}"
    echo "build fuzz_$target: link obj/main_$target.o ${objects[*]}"
  done
} >"$build/build.ninja.new"
cmp -s "$build/build.ninja.new" "$build/build.ninja" || mv "$build/build.ninja.new" "$build/build.ninja"
rm -f "$build/build.ninja.new"
ninja -C "$build" -j "$jobs" >"$build/build.log" 2>&1 || { cat "$build/build.log"; echo "fuzz: build failed"; exit 2; }
((build_only)) && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
unset LOOM_DEBUG LOOM_COMM_ID  # quiet, and nothing steers the code under test

# One target's run: its scratch corpus, libFuzzer, and its one-line verdict in $build/$target.verdict
# (with the first error line and the log's path after a finding). Exit 0 ok, 1 finding.
fuzz_one() {
  local target=$1 work artifacts log rc runs crash
  work=$(mktemp -d "${TMPDIR:-/tmp}/loom-fuzz-$target.XXXXXX")
  artifacts="$build/artifacts/$target"
  mkdir -p "$work/corpus" "$artifacts"
  for seeds in "$here/corpus/$target" "$here/regressions/$target"; do
    [ -d "$seeds" ] && find "$seeds" -maxdepth 1 -type f ! -name '*.md' -exec cp {} "$work/corpus/" \;
  done
  local options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                 -artifact_prefix="$artifacts/")
  [ -f "$here/$target.dict" ] && options+=(-dict="$here/$target.dict")
  [ "$target" = topology_xml ] && options+=(-max_len=16384)
  log="$build/$target.log"
  "$build/fuzz_$target" "${options[@]}" "$work/corpus" >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
  crash=$(grep -o 'Test unit written to .*' "$log" | tail -1 | sed 's/Test unit written to //')
  rm -rf "$work"
  if [ $rc -eq 0 ] && [ -z "$crash" ]; then
    echo "fuzz $target: ${runs:-0} runs, ok" >"$build/$target.verdict"
    return 0
  fi
  {
    echo "fuzz $target: ${runs:-?} runs, CRASH ${crash:-(no input saved; exit $rc, see $log)}"
    grep -m1 -E 'ERROR: |runtime error|fuzz finding|deadly signal' "$log" | sed 's/^/  /'
    echo "  log: $log"
  } >"$build/$target.verdict"
  return 1
}

status=0
running=()
for target in "${targets[@]}"; do
  [ -n "${entry[$target]:-}" ] || { echo "fuzz: unknown target $target"; status=2; continue; }
  rm -f "$build/$target.verdict"
  if ((${#running[@]} >= jobs)); then  # a core is free when the oldest run ends (all take SECONDS)
    wait "${running[0]}" || { ((status)) || status=1; }
    running=("${running[@]:1}")
  fi
  fuzz_one "$target" &
  running+=($!)
done
for pid in "${running[@]}"; do wait "$pid" || { ((status)) || status=1; }; done
for target in "${targets[@]}"; do
  [ -f "$build/$target.verdict" ] && cat "$build/$target.verdict"
done
exit $status
