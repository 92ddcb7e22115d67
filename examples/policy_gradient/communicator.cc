// SPDX-License-Identifier: Apache-2.0
#include "communicator.h"

#include <cstdio>
#include <cstdlib>

namespace policy_gradient {

Communicator::Communicator() {
  // Into a local: after a failed init the handle is not ours to abort.
  loomComm_t comm = nullptr;
  check(loomCommInitFromEnv(&comm), "loomCommInitFromEnv");
  comm_ = comm;
  check(loomCommUserRank(comm_, &rank_), "loomCommUserRank");
  check(loomCommCount(comm_, &size_), "loomCommCount");
}

Communicator::~Communicator() {
  if (comm_ == nullptr) return;
  // Forget the handle first: if destroy fails, check() must neither abort nor query it.
  loomComm_t comm = comm_;
  comm_ = nullptr;
  check(loomCommDestroy(comm), "loomCommDestroy");
}

void Communicator::allReduce(float* values, size_t count, loomRedOp_t op) {
  check(loomAllReduce(values, values, count, loomFloat32, op, comm_, nullptr),
        "loomAllReduce(float32)");
}

void Communicator::allReduce(double* values, size_t count, loomRedOp_t op) {
  check(loomAllReduce(values, values, count, loomFloat64, op, comm_, nullptr),
        "loomAllReduce(float64)");
}

void Communicator::broadcast(float* values, size_t count, int root) {
  check(loomBroadcast(values, values, count, loomFloat32, root, comm_, nullptr), "loomBroadcast");
}

void Communicator::barrier() {
  int token = 0;
  check(loomAllReduce(&token, &token, 1, loomInt32, loomSum, comm_, nullptr),
        "loomAllReduce(barrier)");
}

void Communicator::check(loomResult_t result, const char* call) {
  if (result == loomSuccess) return;
  // comm_ is null when init itself failed; loomGetLastError(NULL) then gives this thread's error.
  std::fprintf(stderr, "policy_gradient: rank %d: %s failed: %s: %s\n", rank_, call,
               loomGetErrorString(result), loomGetLastError(comm_));
  if (comm_ != nullptr) loomCommAbort(comm_);
  std::exit(1);
}

}  // namespace policy_gradient
