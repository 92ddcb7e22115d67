// SPDX-License-Identifier: Apache-2.0
// The emulated GPU (LOOM_DEVICE=emulated): a DeviceRuntime (base/device_runtime.h) with two
// devices whose memory host code cannot dereference, streams that run on their own threads,
// the kernels of kernels/device_kernels.h run thread by thread, CUDA's event semantics, sticky
// errors and fork refusal, so that CI finds the device path's bugs without a GPU.
// device/device_select.h's emulatedRuntime() returns it. The pieces:
//   emulated_memory.h   the address space, allocations and pinned memory
//   emulated_streams.h  stream workers;  emulated_events.h  event records and waits
//   emulated_kernels.h  kernel launches; emulated_faults.h  sticky errors and fork refusal
// This header adds only what tests need beyond the DeviceRuntime interface.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "base/device_runtime.h"

namespace loom::device {

// ---- For tests only: no part of the library calls these. ----

// Enqueues `fn` on an emulated stream, to run on its worker in order with the stream's other
// work (as cuLaunchHostFunc does): a test blocks a stream with it, or checks what ran before.
// A throw from `fn` is a fault of the stream's work, with the sticky error that follows.
void emulatedEnqueueHostFunctionForTesting(DeviceStream stream, std::function<void()> fn);

// Forgets an emulated device's sticky error (what cudaDeviceReset would do, without freeing
// anything), so one test program can check a fault and then go on using the device.
void emulatedClearStickyErrorForTesting(int device);

// How many pointer queries (DeviceRuntime::classify) the emulated runtime has answered in this
// process: a test counts what a call costs.
uint64_t emulatedClassifyCallsForTesting();
// How many copies (DeviceRuntime::copyAsync of at least one byte) it has been asked for.
uint64_t emulatedCopyCallsForTesting();

// Paces the emulated copies (every device, every stream) as a slow or busy copy engine would:
// each copy waits `delay` before it runs, so a caller that reads a copy's destination before
// the copy completed reads stale data. Zero (the default) turns it off.
void emulatedSetCopyDelayForTesting(std::chrono::microseconds delay);
// Lets only `allowed` more copies run; the next ones wait (at most 30 s) until a later call
// allows more. -1 (the default) opens the gate.
void emulatedGateCopiesForTesting(int64_t allowed);

}  // namespace loom::device
