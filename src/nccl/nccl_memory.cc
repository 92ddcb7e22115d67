// SPDX-License-Identifier: Apache-2.0
// Allocation and registration: ncclMemAlloc/Free and ncclCommRegister map onto Loom's own
// (loom.h). A window (ncclCommWindowRegister) is NCCL's symmetric memory: Loom has no
// symmetric kernels, so a window is a registration of the buffer under a handle of its own.
#include <mutex>
#include <new>
#include <unordered_set>

#include "nccl/nccl_shim.h"

using namespace loom::nccl;

// What an ncclWindow_t points to: the registration behind it and the communicator it is of.
struct ncclWindow_vidmem {
  loomComm_t comm;
  void* registration;
};

namespace {

// The live windows: a destroyed or made-up ncclWindow_t is an error, never a pointer followed.
struct Windows {
  std::mutex mutex;
  std::unordered_set<ncclWindow_t> live;
};
Windows& windows() {
  static Windows* all = new Windows;  // never destroyed: a window may be deregistered at exit
  return *all;
}

}  // namespace

LOOM_NCCL_EXPORT ncclResult_t pncclMemAlloc(void** ptr, size_t size) { return forward(loomMemAlloc(ptr, size)); }
LOOM_NCCL_WEAK_ALIAS(ncclMemAlloc)

LOOM_NCCL_EXPORT ncclResult_t pncclMemFree(void* ptr) { return forward(loomMemFree(ptr)); }
LOOM_NCCL_WEAK_ALIAS(ncclMemFree)

LOOM_NCCL_EXPORT ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return forward(loomCommRegister(toLoom(comm), buff, size, handle));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommRegister)

LOOM_NCCL_EXPORT ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  return forward(loomCommDeregister(toLoom(comm), handle));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommDeregister)

LOOM_NCCL_EXPORT ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                     int winFlags) try {
  if (win == nullptr) return refuse(ncclInvalidArgument, "ncclCommWindowRegister", "win is NULL");
  // NCCL_WIN_DEFAULT (0) and NCCL_WIN_COLL_SYMMETRIC (1) are the flags nccl.h 2.28 defines.
  if (winFlags != 0 && winFlags != 1) {
    return refuse(ncclInvalidArgument, "ncclCommWindowRegister",
                  "winFlags " + std::to_string(winFlags) + " is neither NCCL_WIN_DEFAULT nor NCCL_WIN_COLL_SYMMETRIC");
  }
  void* registration = nullptr;
  const ncclResult_t registered = forward(loomCommRegister(toLoom(comm), buff, size, &registration));
  if (registered != ncclSuccess) return registered;
  ncclWindow_vidmem* window = new (std::nothrow) ncclWindow_vidmem{toLoom(comm), registration};
  if (window == nullptr) {
    (void)loomCommDeregister(toLoom(comm), registration);
    return refuse(ncclSystemError, "ncclCommWindowRegister", "out of memory");
  }
  try {
    const std::lock_guard<std::mutex> lock(windows().mutex);
    windows().live.insert(window);
  } catch (...) {
    (void)loomCommDeregister(toLoom(comm), registration);
    delete window;
    return refuse(ncclSystemError, "ncclCommWindowRegister", "out of memory");
  }
  *win = window;
  return ncclSuccess;
} catch (...) {
  return refuseOutOfMemory("ncclCommWindowRegister");  // a message or the table could not grow
}
LOOM_NCCL_WEAK_ALIAS(ncclCommWindowRegister)

LOOM_NCCL_EXPORT ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) try {
  if (win == nullptr) return refuse(ncclInvalidArgument, "ncclCommWindowDeregister", "win is NULL");
  const std::lock_guard<std::mutex> lock(windows().mutex);
  if (windows().live.count(win) == 0) {
    return refuse(ncclInvalidArgument, "ncclCommWindowDeregister", "win is not a live window (deregistered, or never registered)");
  }
  if (win->comm != toLoom(comm)) {
    return refuse(ncclInvalidArgument, "ncclCommWindowDeregister", "win was registered with another communicator");
  }
  const ncclResult_t deregistered = forward(loomCommDeregister(toLoom(comm), win->registration));
  if (deregistered == ncclSuccess) {
    windows().live.erase(win);
    delete win;
  }
  return deregistered;
} catch (...) {
  return refuseOutOfMemory("ncclCommWindowDeregister");
}
LOOM_NCCL_WEAK_ALIAS(ncclCommWindowDeregister)
