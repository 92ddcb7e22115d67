// SPDX-License-Identifier: Apache-2.0
// The memory seam's first half: which of a call's buffers are device memory. Found once, when
// the call is issued (after validate()), so a bad device buffer is an argument error that
// loses nothing, and marked in CallSpec::deviceBuffers; the call then runs on the host path
// when that is 0 and through DeviceStaging (device_staging.h) when not. No layer below the core
// ever sees a device pointer.
//
// Cost on the host path: without a device runtime, one test of the three pointers and one load;
// with one, one pointer query per buffer the call uses (DeviceRuntime::classify).
#pragma once

#include "algorithms/call_spec.h"
#include "base/device_runtime.h"
#include "device/device_select.h"

namespace loom {

// The device a communicator made on this thread binds to: the thread's current device when a
// device runtime is active (choosing the process's runtime if none is chosen yet), else -1.
int deviceAtInit();

// Out of line and cold, also under link-time optimisation: classifies each buffer the call uses
// on this rank and checks it (below); inlined, it cost the host path's issue 28 instructions.
[[gnu::noinline, gnu::cold]] void classifyBuffers(algo::CallSpec& call, int device, int rank, int nranks);

// Sets call.deviceBuffers. Throws loomInvalidArgument naming the rank, the call and the buffer
// for a device buffer of another device than `device`, one whose call extent runs past its
// mapped range, a freed one, and, without a device runtime, any pointer that cannot be host
// memory ("no CUDA driver: ...").
inline void findDeviceBuffers(algo::CallSpec& call, int device, int rank, int nranks) {
  // User-space addresses have bits 63..47 clear: one test for the three pointers (anything
  // else, a kernel-half address included, is looked at closely by classifyBuffers).
  const uintptr_t anyHigh = reinterpret_cast<uintptr_t>(call.send) | reinterpret_cast<uintptr_t>(call.recv) |
                            reinterpret_cast<uintptr_t>(call.premul.memory);
  if ((anyHigh >> 47) == 0 && !device::deviceRuntimeActive()) [[likely]] return;
  classifyBuffers(call, device, rank, nranks);
}

}  // namespace loom
