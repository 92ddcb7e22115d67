// SPDX-License-Identifier: Apache-2.0
// Stream entry points. A stream handle names an entry of the stream table (api_handles.cc), so
// a destroyed, stale or garbage handle is loomInvalidArgument, never a hang or a crash.
#include "api/api_internal.h"
#include "base/config.h"
#include "core/group.h"
#include "core/stream.h"
#include "device/device_select.h"

using namespace loom;

extern "C" {

loomResult_t loomStreamCreate(loomStream_t* stream) {
  return api::guarded("loomStreamCreate", [&] {
    if (stream == nullptr) throwArgument("stream is NULL");
    *stream = api::registerStream(std::make_shared<Stream>());
  });
}

loomResult_t loomStreamDestroy(loomStream_t stream) {
  return api::guarded("loomStreamDestroy", [&] {
    if (stream == nullptr) throwArgument("stream is NULL");
    std::shared_ptr<Stream> impl = api::unregisterStream(stream);
    if (!impl) throwArgument("stream is not a live stream (destroyed, or never created)");
    // Dropping the last reference runs what is queued, then joins the stream's thread; a call
    // being enqueued on another thread right now holds a reference and finishes that instead.
  });
}

loomResult_t loomStreamSynchronize(loomStream_t stream) {
  return api::guarded("loomStreamSynchronize", [&] {
    std::shared_ptr<Stream> impl = api::checkedStream(stream);
    if (!impl) return;  // the NULL stream is always synchronous
    std::string message;
    const loomResult_t result = impl->synchronize(&message);
    if (result != loomSuccess) throw Error(result, message);
  });
}

loomResult_t loomStreamQuery(loomStream_t stream) {
  if (stream == nullptr) return loomSuccess;
  std::shared_ptr<Stream> impl;
  const loomResult_t checked = api::guarded("loomStreamQuery", [&] { impl = api::checkedStream(stream); });
  if (checked != loomSuccess) return checked;
  return impl->idle() ? loomSuccess : loomInProgress;
}

loomResult_t loomLaunchHostFunc(loomStream_t stream, loomHostFn_t fn, void* userData) {
  return api::guarded("loomLaunchHostFunc", [&] {
    if (fn == nullptr) throwArgument("fn is NULL");
    // A group's calls reach their stream at loomGroupEnd; a function enqueued now would run
    // before them, which is never what a caller inside the group means.
    if (group::active()) throwUsage("called inside loomGroupStart/End: call it after loomGroupEnd");
    std::shared_ptr<Stream> impl = api::checkedStream(stream);
    if (!impl) {
      fn(userData);  // the NULL stream: everything issued before has completed
      return;
    }
    impl->enqueueHostFunction([fn, userData] { fn(userData); });
  });
}

const char* loomDeviceRuntime(void) {
  try {
    return device::processRuntime().name();
  } catch (...) {
    return "none";  // the choice failed (a bad LOOM_DEVICE): no runtime; the init will say why
  }
}

loomResult_t loomDeviceStreamSynchronize(void* deviceStream) {
  return api::guarded("loomDeviceStreamSynchronize", [&] {
    const int timeoutMs = static_cast<int>(config::integer(config::Knob::TimeoutMs));
    device::processRuntime().synchronizeApplicationStream(deviceStream, timeoutMs);
  });
}

}  // extern "C"
