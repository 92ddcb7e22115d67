// SPDX-License-Identifier: Apache-2.0
#include "core/premul_input.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/datatype.h"
#include "base/error.h"
#include "kernels/host/premultiply.h"

namespace loom {

algo::CallSpec PreMulSumInput::prepare(const algo::CallSpec& call, int rank, int nranks) {
  algo::CallSpec prepared = call;
  prepared.op = loomSum;
  const size_t elementBytes = typeSize(call.type);
  const size_t inputCount = call.inputBytes(nranks) / elementBytes;
  if (inputCount == 0) return prepared;

  // loomScalarDevice: the memory as it is now, when the call runs; HostImmediate: the value read
  // at creation.
  uint64_t scalar = call.premul.bits;
  if (call.premul.memory != nullptr) std::memcpy(&scalar, call.premul.memory, elementBytes);

  const bool writesOutput = call.collective == algo::Collective::AllReduce ||
                            (call.collective == algo::Collective::Reduce && rank == call.root);
  void* products = writesOutput ? call.recv : staging(inputCount * elementBytes, rank);
  kernels::premultiply(call.type, products, call.send, inputCount, scalar);
  prepared.send = products;
  return prepared;
}

void* PreMulSumInput::staging(size_t bytes, int rank) {
  if (bytes <= stagingBytes_) return staging_.get();
  const size_t rounded = (bytes + 4095) / 4096 * 4096;
  void* memory = std::aligned_alloc(4096, rounded);
  if (memory == nullptr) {
    throwSystem("rank " + std::to_string(rank) + ": PreMulSum input of " + std::to_string(rounded) +
                    " bytes",
                ENOMEM);
  }
  staging_.reset(static_cast<char*>(memory));
  stagingBytes_ = rounded;
  return memory;
}

}  // namespace loom
