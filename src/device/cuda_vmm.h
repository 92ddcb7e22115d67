// SPDX-License-Identifier: Apache-2.0
// loomMemAlloc's device memory under CUDA (DeviceRuntime::allocShareable), made as ncclMemAlloc
// makes it: with the driver's virtual memory API (physical memory from cuMemCreate, mapped into
// an address range of its own) instead of cuMemAlloc, because only memory created with a
// requested handle type can be exported to another process later (cuMemExportToShareableHandle
// of a POSIX file descriptor), which is what an IPC path between ranks on one node needs.
#pragma once

#include "device/cuda_driver.h"

#if LOOM_CUDA_DRIVER

#include <cstddef>

namespace loom::device::cuda {

// `bytes` (> 0) rounded up to the allocation granularity, of `device` (CUdevice; `ordinal`
// names it in messages), mapped read/write for that device, exportable as a POSIX file
// descriptor. A context must be current on the calling thread. Throws loomUnhandledCudaError
// naming the step that failed; nothing is left allocated then.
void* createShareable(const Driver& driver, CUdevice device, int ordinal, size_t bytes);

// Unmaps and releases what createShareable returned, found by its address through the driver's
// own records (cuMemGetAddressRange, cuMemRetainAllocationHandle). Every step runs even after
// one failed; then the first failure is thrown (loomUnhandledCudaError).
void destroyShareable(const Driver& driver, void* pointer);

}  // namespace loom::device::cuda

#endif  // LOOM_CUDA_DRIVER
