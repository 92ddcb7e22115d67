#include "api/api_internal.h"
#include "core/stream.h"

using namespace loom;

extern "C" {

loomResult_t loomStreamCreate(loomStream_t* stream) {
  return api::guarded("loomStreamCreate", [&] {
    if (stream == nullptr) throwArgument("stream is NULL");
    *stream = new loomStream();
  });
}

loomResult_t loomStreamDestroy(loomStream_t stream) {
  return api::guarded("loomStreamDestroy", [&] {
    if (stream == nullptr) throwArgument("stream is NULL");
    delete stream;  // runs what is queued, then joins
  });
}

loomResult_t loomStreamSynchronize(loomStream_t stream) {
  if (stream == nullptr) return loomSuccess;  // the NULL stream is always synchronous
  std::string message;
  loomResult_t result = stream->impl.synchronize(&message);
  return result == loomSuccess ? result : api::fail("loomStreamSynchronize", result, message.c_str());
}

loomResult_t loomStreamQuery(loomStream_t stream) {
  if (stream == nullptr) return loomSuccess;
  return stream->impl.idle() ? loomSuccess : loomInProgress;  // neither allocates nor throws
}

}  // extern "C"
