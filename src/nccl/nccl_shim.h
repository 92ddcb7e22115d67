// SPDX-License-Identifier: Apache-2.0
// What every file of Loom's NCCL library shares: how a function is exported, how a result
// reaches the caller, and how a cudaStream_t is honoured.
//
// The library is a thin layer on Loom's public C API (include/loom.h), as any framework would
// be: an ncclComm_t is a loomComm_t, and the datatypes, ops and result codes have the same
// values, so a call converts nothing on its way through. What NCCL means differently (the
// config, the stream, the version) is translated here and nowhere else.
#pragma once

#include <string>

#include "loom.h"
#include "nccl/nccl_abi.h"

// Defines the profiling twin pnccl<name> (strong) and makes nccl<name> a weak alias of it, as
// NVIDIA's library does: a profiler that defines ncclAllReduce itself can still reach the
// library through pncclAllReduce. Used after the definition of pnccl<name>.
#define LOOM_NCCL_EXPORT extern "C" __attribute__((visibility("default")))
#define LOOM_NCCL_WEAK_ALIAS(name) \
  LOOM_NCCL_EXPORT __typeof__(p##name) name __attribute__((weak, alias("p" #name)));

namespace loom::nccl {

inline loomComm_t toLoom(ncclComm_t comm) { return reinterpret_cast<loomComm_t>(comm); }
inline ncclComm_t toNccl(loomComm_t comm) { return reinterpret_cast<ncclComm_t>(comm); }

// A failure this library found itself (a config's magic, a stream without CUDA): recorded as
// the thread's last error, "function: message", for ncclGetLastError, and returned.
ncclResult_t refuse(ncclResult_t code, const char* function, const std::string& message);

// Loom's answer: the same value; a failure's message is then the one Loom recorded.
void noteLoomFailure();
inline ncclResult_t forward(loomResult_t result) {
  if (result != loomSuccess && result != loomInProgress) [[unlikely]] noteLoomFailure();
  return static_cast<ncclResult_t>(result);
}

// Under CUDA the call's stream (0: the legacy default stream) is synchronized first, so the call,
// which completes before it returns, runs after the work queued on it: correct, though not yet
// asynchronous. Without CUDA the NULL stream is the calling thread, and another is refused.
ncclResult_t settleStreamSlow(cudaStream_t stream, const char* function);
inline bool cudaRuntime() {
  static const bool cuda = __builtin_strcmp(loomDeviceRuntime(), "cuda") == 0;  // chosen once per process
  return cuda;
}
inline ncclResult_t settleStream(cudaStream_t stream, const char* function) {
  if (stream == nullptr && !cudaRuntime()) [[likely]] return ncclSuccess;
  return settleStreamSlow(stream, function);
}

// An ncclConfig_t, read by its size (a program built against an older nccl.h passes a shorter
// one), as the loomConfig_t Loom reads. Refuses a bad magic or a size no nccl.h ever had.
ncclResult_t toLoomConfig(const ncclConfig_t* config, loomConfig_t* out, const char* function);

}  // namespace loom::nccl
