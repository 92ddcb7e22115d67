// SPDX-License-Identifier: Apache-2.0
// Loom's messages in a PyTorch user's words. Loom speaks of what a C caller did
// (loomCommDestroy, a communicator, allreduce #2); a PyTorch user called destroy_process_group
// and all_reduce. Every place loom_torch surfaces a Loom error (loomGetLastError in a
// RuntimeError) passes the text through inUserTerms first.
#pragma once

#include <string>

namespace loom_torch {

// `message` with Loom's phrases for what a peer or the caller did rewritten in
// torch.distributed's terms:
//   "rank 1 (pid 123) left the communicator (loomCommDestroy, loomCommAbort, or its process
//    exited)"                       -> "rank 1 (pid 123) exited or destroyed its process group"
//   "communicator C is unusable since its allreduce #2 (...) failed; destroy it (loomCommDestroy)
//    and create a new one (...)."   -> "the process group is unusable since its all_reduce #2
//    (...) failed; destroy it and create a new one (destroy_process_group() then
//    init_process_group(), or a new new_group())."
// and a few parentheses that name C calls; every numbered call ("allreduce #2") takes torch's
// name ("all_reduce #2"). The phrases are the library's (src/base/peer_left.h,
// src/core/error_state.cc, src/algorithms/executor.cc); anything else passes unchanged.
std::string inUserTerms(const std::string& message);

}  // namespace loom_torch
