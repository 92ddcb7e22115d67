// SPDX-License-Identifier: Apache-2.0
// Results, error strings and the last error. Loom keeps the last error of each thread; this
// library adds its own failures (found before Loom is called) and says which is the latest.
#include <cctype>
#include <cstring>
#include <string>

#include "nccl/nccl_shim.h"

namespace loom::nccl {

namespace {

struct LastError {
  std::string ours;       // this library's last refusal, "function: message"
  std::string loomsThen;  // Loom's last error at that moment: while Loom's still reads so,
                          // nothing failed in Loom since, and ours is the latest
  bool haveOurs = false;
  std::string shown;      // what ncclGetLastError returned last (it must outlive the call)
};
thread_local LastError lastError;

// The names nccl.h has: a Loom name in a message becomes NCCL's only where NCCL has it.
constexpr const char* kNcclNames[] = {
    "ncclMemAlloc", "ncclMemFree", "ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRankConfig",
    "ncclCommInitRank", "ncclCommInitAll", "ncclCommFinalize", "ncclCommDestroy", "ncclCommAbort",
    "ncclCommRevoke", "ncclCommSplit", "ncclCommShrink", "ncclCommInitRankScalable", "ncclGetErrorString",
    "ncclGetLastError", "ncclResetDebugInit", "ncclCommGetAsyncError", "ncclCommCount", "ncclCommCuDevice",
    "ncclCommUserRank", "ncclCommRegister", "ncclCommDeregister", "ncclCommWindowRegister",
    "ncclCommWindowDeregister", "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy", "ncclReduce", "ncclBcast",
    "ncclBroadcast", "ncclAllReduce", "ncclReduceScatter", "ncclAllGather", "ncclAlltoAll", "ncclGather",
    "ncclScatter", "ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd", "ncclGroupSimulateEnd",
    "ncclConfig_t", "ncclUniqueId", "ncclComm_t", "ncclResult_t", "ncclDataType_t", "ncclRedOp_t",
    "ncclScalarResidence_t", "ncclSimInfo_t"};

bool isNcclName(const std::string& name) {
  for (const char* known : kNcclNames) {
    if (name == known) return true;
  }
  return false;
}

bool identifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Loom's messages name Loom's functions and types ("loomAllReduce: rank 1: ...", "made by
// loomRedOpCreatePreMulSum", "loomConfig_t"); a program of NCCL's reads NCCL's names. A Loom
// name whose NCCL twin exists becomes it; one without (loomCommInitFromEnv) stays as it is.
std::string inNcclTerms(const char* message) {
  static const char* const kRenamed[][2] = {{"loomCommDevice", "ncclCommCuDevice"},
                                             {"loomGetUniqueIdFlags", "ncclGetUniqueId"}};
  const std::string text = message != nullptr ? message : "";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if ((i > 0 && identifierChar(text[i - 1])) || text.compare(i, 4, "loom") != 0) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && identifierChar(text[end])) ++end;
    const std::string word = text.substr(i, end - i);
    std::string renamed = "nccl" + word.substr(4);
    for (const auto& [loomName, ncclName] : kRenamed) {
      if (word == loomName) renamed = ncclName;
    }
    out += isNcclName(renamed) ? renamed : word;
    i = end;
  }
  return out;
}

}  // namespace

[[gnu::tls_model("initial-exec")]] thread_local int groupDepth = 0;
[[gnu::tls_model("initial-exec")]] thread_local ncclResult_t groupFailure = ncclSuccess;

ncclResult_t refuse(ncclResult_t code, const char* function, const std::string& message) noexcept {
  // Loom fails the whole group when one of its calls fails; a call this library refused never
  // reached Loom, so the group's end is told here (nccl_collectives.cc, pncclGroupEnd).
  if (groupDepth > 0 && groupFailure == ncclSuccess) groupFailure = code;
  try {
    lastError.ours = std::string(function) + ": " + message;
    lastError.loomsThen = loomGetLastError(nullptr);
    lastError.haveOurs = true;
  } catch (...) {
    lastError.haveOurs = false;  // no memory for the message: Loom's is shown
  }
  return code;
}

ncclResult_t adoptLoomFailure(loomResult_t result) noexcept {
  if (result == loomSuccess || result == loomInProgress) return static_cast<ncclResult_t>(result);
  try {
    lastError.ours = inNcclTerms(loomGetLastError(nullptr));
    lastError.loomsThen = loomGetLastError(nullptr);
    lastError.haveOurs = true;
  } catch (...) {
    lastError.haveOurs = false;
  }
  return static_cast<ncclResult_t>(result);
}

ncclResult_t refuseOutOfMemory(const char* function) noexcept {
  return refuse(ncclSystemError, function, std::string());  // the code still reaches the caller
}

const std::string& lastRefusal() { return lastError.ours; }

}  // namespace loom::nccl

using namespace loom::nccl;

LOOM_NCCL_EXPORT const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the Loom developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}
LOOM_NCCL_WEAK_ALIAS(ncclGetErrorString)

LOOM_NCCL_EXPORT const char* pncclGetLastError(ncclComm_t comm) {
  try {
    const bool oursLatest = lastError.haveOurs && lastError.loomsThen == loomGetLastError(nullptr);
    lastError.shown = oursLatest ? lastError.ours : inNcclTerms(loomGetLastError(toLoom(comm)));
    return lastError.shown.c_str();
  } catch (...) {
    return "out of memory while reporting the last error";
  }
}
LOOM_NCCL_WEAK_ALIAS(ncclGetLastError)

LOOM_NCCL_EXPORT ncclResult_t pncclGetVersion(int* version) {
  // NCCL's code for the ABI implemented: frameworks gate features on it. Loom's own version is
  // in the INFO log of the first init ("Loom version ...").
  if (version == nullptr) return refuse(ncclInvalidArgument, "ncclGetVersion", "version is NULL");
  *version = LOOM_NCCL_ABI_CODE;
  return ncclSuccess;
}
LOOM_NCCL_WEAK_ALIAS(ncclGetVersion)

LOOM_NCCL_EXPORT void pncclResetDebugInit(void) { (void)loomResetDebugInit(); }
LOOM_NCCL_WEAK_ALIAS(ncclResetDebugInit)
