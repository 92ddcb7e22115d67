// SPDX-License-Identifier: Apache-2.0
// How a PreMulSum call (loomRedOpCreatePreMulSum; CallSpec::premul) runs: this rank multiplies
// its own input by its own scalar first (kernels/host/premultiply.h), and the call then runs as
// a plain sum of those products, on whatever path it takes (direct engine, ring, chain,
// deterministic). So each rank's scalar applies to its input only, as nccl.h defines it (ranks
// may pass different scalars), no path needs to know the operator, and the products round the
// way NCCL's do (once, in the datatype). The scalar is read here, when the call runs: that is
// when a loomScalarDevice operator reads its memory.
//
// Where the products go: an all-reduce's and the root's reduce output (the call then runs in
// place; the output is overwritten anyway), else this buffer, which stays with the communicator
// (fresh pages cost ~11 us each on this class of VM). Used by the turn holder only.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

#include "algorithms/call_spec.h"

namespace loom {

class PreMulSumInput {
 public:
  // The call to run in place of `call` (call.premul.active): send is this rank's premultiplied
  // input, op is loomSum, and premul stays active so the descriptor the ranks compare still
  // says premulsum.
  algo::CallSpec prepare(const algo::CallSpec& call, int rank, int nranks);

 private:
  void* staging(size_t bytes, int rank);

  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<char, FreeDeleter> staging_;
  size_t stagingBytes_ = 0;
};

}  // namespace loom
