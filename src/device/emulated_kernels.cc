// SPDX-License-Identifier: Apache-2.0
#include "device/emulated_kernels.h"

#include <atomic>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "base/datatype.h"
#include "base/error.h"

namespace loom::device::emulated {
namespace {

namespace kd = loom::kernels::device;

const char* kindName(kd::KernelKind kind) {
  switch (kind) {
    case kd::KernelKind::Reduce: return "reduce kernel";
    case kd::KernelKind::Average: return "average kernel";
    case kd::KernelKind::FinishAverage: return "finishAverage kernel";
    case kd::KernelKind::Premultiply: return "premultiply kernel";
  }
  return "kernel";
}

// splitmix64 over a launch counter: every launch a different order, the same sequence in every
// run of a program that launches in the same order (a failure can be reproduced).
uint64_t nextRandom() {
  static std::atomic<uint64_t> counter{0x6c6f6f6d};
  uint64_t z = counter.fetch_add(0x9e3779b97f4a7c15ull, std::memory_order_relaxed) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The destination may alias an input exactly (every element is read and then written by one
// thread), never partially: then a thread would read what another already overwrote.
void checkAlias(const char* kernel, const Operand& dst, const Operand& input, size_t bytes) {
  if (dst.host == input.host) return;
  if (dst.host < input.host + bytes && input.host < dst.host + bytes) {
    throwArgument(std::string(kernel) + ": the destination " + pointerText(dst.pointer) + " partially overlaps " +
                  input.role + " " + pointerText(input.pointer) + " (" + std::to_string(bytes) +
                  " bytes each); the destination may only alias an input exactly");
  }
}

}  // namespace

Operand KernelLaunch::reachable(const AddressSpace& memory, const void* pointer, size_t bytes, const char* role,
                                int streamDevice) const {
  Operand operand = memory.resolve(pointer, bytes, role);
  const std::string what = std::string(name_) + " on emulated device " + std::to_string(streamDevice) + ": " +
                           role + " " + pointerText(pointer);
  if (operand.domain == MemoryDomain::Host) {
    throwArgument(what + " is pageable host memory, which a kernel cannot reach (pass device memory or "
                  "pinned host memory)");
  }
  if (operand.domain == MemoryDomain::Device && operand.allocation->device != streamDevice) {
    throwArgument(what + " is memory of emulated device " + std::to_string(operand.allocation->device) +
                  ", which a kernel of another device cannot reach (no peer access)");
  }
  return operand;
}

KernelLaunch::KernelLaunch(const AddressSpace& memory, const KernelRequest& request, int streamDevice)
    : name_(kindName(request.kind)) {
  const size_t elementBytes = typeSize(request.type);
  if (elementBytes == 0) {
    throwArgument(std::string(name_) + ": datatype " + std::to_string(int(request.type)) + " is not a loomDataType_t");
  }
  const loomRedOp_t op = request.kind == kd::KernelKind::Reduce ? request.op : loomSum;
  if (!kd::findKernelBody(request.kind, request.type, op, &body_)) {
    throwArgument(std::string(name_) + ": no kernel reduces " + typeName(request.type) + " with op " +
                  std::to_string(int(op)) + " (" + opName(op) + "); a PreMulSum op is premultiply, then sum");
  }
  const bool averaging = request.kind == kd::KernelKind::Average || request.kind == kd::KernelKind::FinishAverage;
  if (averaging && request.nranks < 1) {
    throwArgument(std::string(name_) + ": nranks is " + std::to_string(request.nranks) + "; it must be >= 1");
  }
  if (request.count > std::numeric_limits<size_t>::max() / elementBytes) {
    throwArgument(std::string(name_) + ": " + std::to_string(request.count) + " elements of " +
                  typeName(request.type) + " overflow a size_t of bytes");
  }
  const size_t bytes = request.count * elementBytes;

  args_.count = request.count;
  args_.nranks = request.nranks;
  args_.incomingRaw = request.incomingRaw;
  // What each kind reads besides dst (premultiply's scalar is not an array: it is not packed).
  const void* inputs[2] = {nullptr, nullptr};
  const char* roles[2] = {"", ""};
  int inputCount = 0;
  switch (request.kind) {
    case kd::KernelKind::Reduce:
      inputs[0] = request.a, inputs[1] = request.b, roles[0] = "input a", roles[1] = "input b";
      inputCount = 2;
      break;
    case kd::KernelKind::Average:
      inputs[0] = request.a, inputs[1] = request.b, roles[0] = "the local input", roles[1] = "the incoming input";
      inputCount = 2;
      break;
    case kd::KernelKind::FinishAverage:
      break;
    case kd::KernelKind::Premultiply:
      inputs[0] = request.a, roles[0] = "the source";
      inputCount = 1;
      break;
  }
  // A launch over no elements touches nothing: like a GPU, the emulator looks at no pointer.
  if (request.count > 0) {
    operands_.push_back(reachable(memory, request.dst, bytes, "the destination", streamDevice));
    args_.dst = operands_[0].host;
    args_.a = operands_[0].host;  // finishAverage reads dst; the others overwrite this below
    for (int i = 0; i < inputCount; ++i) {
      operands_.push_back(reachable(memory, inputs[i], bytes, roles[i], streamDevice));
      checkAlias(name_, operands_[0], operands_.back(), bytes);
      (i == 0 ? args_.a : args_.b) = operands_.back().host;
    }
    if (request.kind == kd::KernelKind::Premultiply) {
      if (request.scalar == nullptr) throwArgument(std::string(name_) + ": the scalar is a null pointer");
      if (isCanonicalHostAddress(request.scalar)) {
        // A host scalar is read now, as a kernel parameter would be; pinned memory is checked
        // for room like any operand.
        const Operand scalar = memory.resolve(request.scalar, elementBytes, "the scalar");
        std::memcpy(&args_.scalarBits, scalar.host, elementBytes);
      } else {
        // A device scalar is read by every thread when the kernel runs.
        operands_.push_back(reachable(memory, request.scalar, elementBytes, "the scalar", streamDevice));
        args_.b = operands_.back().host;
      }
    }
  }
  // Packing is decided on the caller's addresses, as the GPU decides on device addresses:
  // allocations start 256-aligned, so the offsets into them decide.
  args_.packed = kd::packAligned(request.dst) && (inputs[0] == nullptr || kd::packAligned(inputs[0])) &&
                 (inputs[1] == nullptr || kd::packAligned(inputs[1]));
  shape_ = kd::launchShape(request.count, elementBytes, args_.packed);

  const size_t threads = shape_.threads();
  first_ = nextRandom() % threads;
  do {
    stride_ = 1 + nextRandom() % (threads - 1);
  } while (std::gcd(stride_, threads) != 1);
}

void KernelLaunch::run() const {
  for (const Operand& operand : operands_) operand.checkLive();
  const size_t threads = shape_.threads();
  size_t thread = first_;
  for (size_t i = 0; i < threads; ++i) {
    body_(thread, threads, args_);
    thread += stride_;
    if (thread >= threads) thread -= threads;
  }
}

}  // namespace loom::device::emulated
