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
// the thread's last error, "function: message", for ncclGetLastError, and returned. Inside a
// group it fails the group, as Loom's own failures do.
ncclResult_t refuse(ncclResult_t code, const char* function, const std::string& message) noexcept;
// Loom's failure, made this library's latest: for the slow paths that call Loom after a
// refusal may have left the same text behind (ncclGetLastError compares Loom's text with what
// it read at the last refusal, so a repeat of that exact text would otherwise look older).
ncclResult_t adoptLoomFailure(loomResult_t result) noexcept;
// When even the message cannot be built: ncclSystemError.
ncclResult_t refuseOutOfMemory(const char* function) noexcept;
// The last refusal's text ("function: message").
const std::string& lastRefusal();

// This thread's ncclGroupStart nesting, and the first refusal inside the open group.
[[gnu::tls_model("initial-exec")]] extern thread_local int groupDepth;
[[gnu::tls_model("initial-exec")]] extern thread_local ncclResult_t groupFailure;

// Loom's answer, the same value. A failure's message is the one Loom recorded, unless this
// library refused a call since (ncclGetLastError tells which came last).
inline ncclResult_t forward(loomResult_t result) { return static_cast<ncclResult_t>(result); }

// Under CUDA the call's stream (0: the legacy default stream) is synchronized first, so the call,
// which completes before it returns, runs after the work queued on it: correct, though not yet
// asynchronous. Without CUDA the NULL stream is the calling thread, and another is refused.
ncclResult_t settleStream(cudaStream_t stream, const char* function);
// Whether the process's device runtime is CUDA: unknown until the first call with the NULL
// stream asks (a plain byte, so the hot path is two compares and no guard).
enum class StreamMode : unsigned char { Unknown, HostOnly, Cuda };
extern StreamMode streamMode;
inline bool needsSettling(cudaStream_t stream) { return stream != nullptr || streamMode != StreamMode::HostOnly; }

// The hot path of every call that takes a stream: with the NULL stream and no CUDA, the Loom
// call itself, as a tail call (NCCL's layer then costs a few instructions); else the stream is
// settled first, out of line.
template <class Call>
[[gnu::noinline, gnu::cold]] ncclResult_t settleThen(cudaStream_t stream, const char* function, Call call) {
  if (const ncclResult_t settled = settleStream(stream, function); settled != ncclSuccess) return settled;
  return forward(call());
}
#define LOOM_NCCL_CALL(stream, function, ...)                                               \
  do {                                                                                      \
    if (::loom::nccl::needsSettling(stream)) [[unlikely]] {                                 \
      return ::loom::nccl::settleThen(stream, function, [=] { return __VA_ARGS__; });      \
    }                                                                                       \
    return ::loom::nccl::forward(__VA_ARGS__);                                              \
  } while (0)

// An ncclConfig_t, read by its size (a program built against an older nccl.h passes a shorter
// one), as the loomConfig_t Loom reads. Refuses a bad magic or a size no nccl.h ever had.
ncclResult_t toLoomConfig(const ncclConfig_t* config, loomConfig_t* out, const char* function);

}  // namespace loom::nccl
