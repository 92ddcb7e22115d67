// SPDX-License-Identifier: Apache-2.0
// The end of a group that queued communicator inits (core/group.h, deferInit).
#pragma once

#include <string>
#include <vector>

#include "core/group.h"

namespace loom::group {

// Runs the inits together: the blocking ones on threads of their own (the first on the calling
// thread), waited for, the first failure thrown; the non-blocking ones started on detached
// threads, returning loomInProgress. Every init's finish is called exactly once. Refused
// (loomInvalidUsage, every init finished with the reason, nothing run) when the group also
// queued `otherCalls` calls, or mixes blocking with non-blocking inits, as NCCL refuses both;
// when a call of the group already failed (`failure`), every init fails with that.
loomResult_t runDeferredInits(std::vector<DeferredInit>& inits, size_t otherCalls, loomResult_t failure,
                              const std::string& failureMessage);

}  // namespace loom::group
