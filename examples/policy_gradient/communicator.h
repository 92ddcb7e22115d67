// SPDX-License-Identifier: Apache-2.0
// The sample's only contact with Loom: a communicator made from loomrun's environment, and the
// few collectives training needs. Every call is checked; a failure prints the call, the result
// and loomGetLastError (which names the rank, the peer and the collective), aborts the
// communicator so its peers are not left waiting, and exits with status 1.
#pragma once

#include <cstddef>

#include <loom.h>

namespace policy_gradient {

class Communicator {
 public:
  // loomCommInitFromEnv: loomrun (or torchrun, mpirun, srun) says who we are.
  Communicator();
  ~Communicator();  // loomCommDestroy
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // In place; every rank ends with the same bits.
  void allReduce(float* values, size_t count, loomRedOp_t op);
  void allReduce(double* values, size_t count, loomRedOp_t op);
  void broadcast(float* values, size_t count, int root);
  // Returns once every rank has called it (an all-reduce of one int).
  void barrier();

 private:
  void check(loomResult_t result, const char* call);

  loomComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace policy_gradient
