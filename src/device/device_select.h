// SPDX-License-Identifier: Apache-2.0
// Which DeviceRuntime (base/device_runtime.h) this process uses. Chosen once, at the first
// call that needs one, from LOOM_DEVICE:
//   auto      CUDA when libcuda.so.1 loads and reports a GPU; otherwise none
//   none      host buffers only; a pointer that cannot be host memory is a clear error
//   cuda      CUDA, or an error naming why it is unavailable (no driver, the toolkit's stub
//             driver, no device)
//   emulated  the emulated GPU (device/emulated_runtime.h), for tests and for trying the device
//             path on a machine without one
// A process has one runtime for its life, as it has one CUDA driver.
#pragma once

#include <atomic>
#include <string>

#include "base/device_runtime.h"

namespace loom::device {

// The process's runtime; the first call chooses it (thread-safe). Throws loom::Error when
// LOOM_DEVICE=cuda names a runtime that cannot load.
DeviceRuntime& processRuntime();

// True once processRuntime() has chosen a runtime that is not "none". The host path asks this
// (one load, inline) before it classifies any pointer.
namespace detail {
extern std::atomic<bool> runtimeActive;
}
inline bool deviceRuntimeActive() { return detail::runtimeActive.load(std::memory_order_acquire); }

// The "none" runtime: classify() says Host for every canonical address and throws for any
// other ("no CUDA driver: ..."), and every device operation throws.
DeviceRuntime& noneRuntime();

// The emulated GPU, whichever runtime the process chose: tests make device buffers with it
// while the process runs "none", to show what "none" does with them.
DeviceRuntime& emulatedRuntime();

// CUDA through the driver API, or null with *why set when it cannot load (cuda_runtime.cc).
DeviceRuntime* cudaRuntime(std::string* why);

}  // namespace loom::device
