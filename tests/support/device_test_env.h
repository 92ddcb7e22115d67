// SPDX-License-Identifier: Apache-2.0
// The device suite's choice of runtime: LOOM_DEVICE when the environment sets it (tests/gpu/
// run.sh sets cuda), else the emulated GPU. Called first thing in a test program's main (or a
// static initializer), before anything of Loom reads LOOM_DEVICE.
#pragma once

#include <cstdlib>

namespace loom::test {

inline void chooseDeviceForTests() { setenv("LOOM_DEVICE", "emulated", /*overwrite=*/0); }

// A static initializer that does it for the test files that include this header.
inline const bool kDeviceChosenForTests = (chooseDeviceForTests(), true);

}  // namespace loom::test
