// SPDX-License-Identifier: Apache-2.0
// The PreMulSum operators made by loomRedOpCreatePreMulSum: what each op value names.
//
// An op value is a handle of the C API, like loomComm_t, so it lives here with the handle tables
// and the core never sees one: the API resolves it into the call's CallSpec::premul before
// validate(), and the communicator runs that (core/premul_input.h). One table for the process,
// not one per communicator, and values are never reused (until 2^31 operators have been made):
// an op used on a communicator other than its own, or after loomRedOpDestroy, is then an error
// that says which, where per-communicator numbering (NCCL's) would silently find another
// communicator's operator with the same number. A communicator's operators go when its handle
// does (unregisterComm).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "algorithms/call_spec.h"
#include "loom.h"

namespace loom::api {

struct PreMulSumOp {
  loomComm_t comm = nullptr;          // the only communicator it may be used on
  std::string commName;               // for messages
  loomDataType_t type = loomFloat32;  // the only datatype it may be used with
  algo::PreMulSum scalar;             // memory (loomScalarDevice) or bits (HostImmediate)
};

// A new operator's value (>= loomNumOps).
loomRedOp_t addPreMulSumOp(PreMulSumOp op);

// loomRedOpDestroy: throws loomInvalidArgument naming the op when it is not a live operator of
// `comm` (built-in, never created, destroyed already, or another communicator's).
void removePreMulSumOp(int op, loomComm_t comm, const std::string& commName);

// Every operator of a communicator whose handle is going away.
void removePreMulSumOps(loomComm_t comm);

// For a reducing call whose op is >= loomNumOps: fills call.premul from the operator, or throws
// loomInvalidArgument naming the op when it is not a live operator of call.comm for call.type.
// Other calls are left as they are (validate() judges their op). Inline: every call passes here.
void resolvePreMulSumOperator(algo::CallSpec& call, const std::string& commName);
inline void resolvePreMulSum(algo::CallSpec& call, const std::string& commName) {
  int op;
  std::memcpy(&op, &call.op, sizeof(op));  // raw: a C caller may pass any int
  if (op >= loomNumOps && algo::hasOp(call.collective)) resolvePreMulSumOperator(call, commName);
}

}  // namespace loom::api
