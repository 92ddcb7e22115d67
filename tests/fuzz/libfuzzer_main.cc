// SPDX-License-Identifier: Apache-2.0
// libFuzzer's entry for one target, chosen at compile time: run.sh builds this file once per
// target with -DLOOM_FUZZ_ENTRY=<entry function> (see fuzz_targets.h).
#include <cstdio>
#include <cstdlib>

#include "fuzz_targets.h"

#ifndef LOOM_FUZZ_ENTRY
#error "define LOOM_FUZZ_ENTRY to one of the entry functions of fuzz_targets.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    loom::fuzz::LOOM_FUZZ_ENTRY(data, size);
  } catch (const loom::fuzz::Finding& finding) {
    std::fprintf(stderr, "fuzz finding: %s\n", finding.what.c_str());
    std::abort();  // libFuzzer saves the input as a crash
  }
  return 0;
}
