// SPDX-License-Identifier: Apache-2.0
// loomRedOpCreatePreMulSum and loomRedOpDestroy: user reduction operators (nccl.h's semantics;
// the operator table is api/red_op_table.h, how a call runs one core/premul_input.h).
#include <cstring>
#include <string>

#include "api/api_internal.h"
#include "api/red_op_table.h"
#include "base/datatype.h"

using namespace loom;

extern "C" {

loomResult_t loomRedOpCreatePreMulSum(loomRedOp_t* op, void* scalar, loomDataType_t datatype,
                                      loomScalarResidence_t residence, loomComm_t comm) {
  return api::guarded("loomRedOpCreatePreMulSum", [&] {
    std::shared_ptr<Communicator> impl = api::checkedComm(comm);
    if (op == nullptr) throwArgument("op is NULL");
    if (scalar == nullptr) throwArgument("scalar is NULL");
    int rawType, rawResidence;  // a C caller may pass any int
    std::memcpy(&rawType, &datatype, sizeof(rawType));
    std::memcpy(&rawResidence, &residence, sizeof(rawResidence));
    if (rawType < 0 || rawType >= loomNumTypes)
      throwArgument("invalid datatype " + std::to_string(rawType));
    if (rawResidence != loomScalarDevice && rawResidence != loomScalarHostImmediate) {
      throwArgument("residence " + std::to_string(rawResidence) +
                    " is neither loomScalarDevice (0) nor loomScalarHostImmediate (1)");
    }
    api::PreMulSumOp entry;
    entry.comm = comm;
    entry.commName = impl->name();
    entry.type = static_cast<loomDataType_t>(rawType);
    if (rawResidence == loomScalarHostImmediate) {
      std::memcpy(&entry.scalar.bits, scalar, typeSize(entry.type));  // read once, now
    } else {
      entry.scalar.memory = scalar;  // read by every call using the operator, when it runs
    }
    *op = api::addPreMulSumOp(std::move(entry));
  });
}

loomResult_t loomRedOpDestroy(loomRedOp_t op, loomComm_t comm) {
  return api::guarded("loomRedOpDestroy", [&] {
    std::shared_ptr<Communicator> impl = api::checkedComm(comm);
    int rawOp;
    std::memcpy(&rawOp, &op, sizeof(rawOp));
    api::removePreMulSumOp(rawOp, comm, impl->name());
  });
}

}  // extern "C"
