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
  std::string ours;       // this library's last failure
  bool oursLatest = false;  // ... and it came after Loom's
  std::string shown;      // what ncclGetLastError returned last (it must outlive the call)
};
thread_local LastError lastError;

// Loom's messages name Loom's functions and types ("loomAllReduce: rank 1: ...", "made by
// loomRedOpCreatePreMulSum", "loomConfig_t"); a program of NCCL's reads NCCL's names. Every
// identifier `loom` + capital becomes `nccl` + the rest, except where the names differ by more.
std::string inNcclTerms(const char* message) {
  static const char* const kRenamed[][2] = {{"loomCommDevice", "ncclCommCuDevice"},
                                             {"loomGetUniqueIdFlags", "ncclGetUniqueId"}};
  const std::string text = message != nullptr ? message : "";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const bool wordStart = i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_');
    if (!wordStart || text.compare(i, 4, "loom") != 0 || i + 4 >= text.size() ||
        !std::isupper(static_cast<unsigned char>(text[i + 4]))) {
      out += text[i++];
      continue;
    }
    size_t end = i + 4;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    std::string word = text.substr(i, end - i);
    std::string renamed = "nccl" + word.substr(4);
    for (const auto& [loomName, ncclName] : kRenamed) {
      if (word == loomName) renamed = ncclName;
    }
    out += renamed;
    i = end;
  }
  return out;
}

}  // namespace

ncclResult_t refuse(ncclResult_t code, const char* function, const std::string& message) {
  try {
    lastError.ours = std::string(function) + ": " + message;
    lastError.oursLatest = true;
  } catch (...) {
  }
  return code;
}

void noteLoomFailure() { lastError.oursLatest = false; }

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
    lastError.shown = lastError.oursLatest ? lastError.ours : inNcclTerms(loomGetLastError(toLoom(comm)));
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
