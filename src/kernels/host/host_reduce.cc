// SPDX-License-Identifier: Apache-2.0
// Which datatypes the kernels reduce, and the dispatch of reduce()/divide() to the best instruction-set variant
// of the kernels (chosen once, from what the CPU reports).
#include "kernels/host/host_reduce.h"

#include <strings.h>

#include <cstdlib>
#include <string>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "kernels/host/host_kernel_table.h"
#include "kernels/host/host_reduce_isa.h"

namespace loom::kernels {

bool typeSupported(loomDataType_t type) {
  return visitDataType(type, [](auto) {});
}

const char* hostIsaName(HostIsa isa) {
  switch (isa) {
    case HostIsa::Generic:
      return "generic";
    case HostIsa::Avx2:
      return "avx2";
    case HostIsa::Avx512:
      return "avx512";
  }
  return "unknown";
}

bool hostIsaAvailable(HostIsa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();  // safe to call again; needed if we run before constructors
  switch (isa) {
    case HostIsa::Generic:
      return true;
    case HostIsa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case HostIsa::Avx512:
      return hostIsaAvailable(HostIsa::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq");
  }
  return false;
#else
  return isa == HostIsa::Generic;
#endif
}

namespace {

HostIsa fastestAvailableIsa() {
  for (HostIsa isa : {HostIsa::Avx512, HostIsa::Avx2}) {
    if (hostIsaAvailable(isa)) return isa;
  }
  return HostIsa::Generic;
}

// LOOM_HOST_ISA=generic|avx2|avx512 narrows the choice (to rule a variant out when chasing a
// numerical or performance question). The registry warns about a value it does not know; one
// this CPU lacks is reported here and ignored.
HostIsa chooseIsa() {
  const HostIsa fastest = fastestAvailableIsa();
  HostIsa chosen = fastest;
  const std::string requested = config::choice(config::Knob::HostIsa);
  for (HostIsa isa : {HostIsa::Generic, HostIsa::Avx2, HostIsa::Avx512}) {
    if (requested != hostIsaName(isa)) continue;
    if (hostIsaAvailable(isa)) {
      chosen = isa;
    } else {
      LOOM_WARN(INIT, "LOOM_HOST_ISA=%s: not supported by this CPU, using %s", requested.c_str(),
                hostIsaName(fastest));
    }
  }
  LOOM_INFO(INIT, "host reduction kernels: %s", hostIsaName(chosen));
  return chosen;
}

}  // namespace

HostIsa bestHostIsa() {
  static const HostIsa best = chooseIsa();
  return best;
}

namespace {

const KernelTable& kernelTable(HostIsa isa) {
  if (!hostIsaAvailable(isa)) {
    throwArgument(std::string("host kernels: ") + hostIsaName(isa) + " is not available here");
  }
#if defined(__x86_64__)
  if (isa == HostIsa::Avx512) return avx512KernelTable();
  if (isa == HostIsa::Avx2) return avx2KernelTable();
#endif
  return genericKernelTable();
}

const KernelTable& bestKernelTable() {
  static const KernelTable& table = kernelTable(bestHostIsa());
  return table;
}

// Through int: the enums' underlying types may be unsigned, and callers pass raw C values.
bool knownType(loomDataType_t type) {
  return static_cast<int>(type) >= 0 && static_cast<int>(type) < loomNumTypes;
}
bool knownOp(loomRedOp_t op) {
  return static_cast<int>(op) >= 0 && static_cast<int>(op) < loomNumOps;
}

[[noreturn, gnu::noinline, gnu::cold]] void throwUnsupportedReduce(loomDataType_t type, loomRedOp_t op) {
  throwArgument(std::string("reduce: unsupported datatype ") + typeName(type) + " (" +
                std::to_string(static_cast<int>(type)) + ") or op " + opName(op) + " (" +
                std::to_string(static_cast<int>(op)) + ")");
}

// The error's strings are built out of line: the lookup is on every reducing call's path.
ReduceFn reduceKernel(const KernelTable& table, loomDataType_t type, loomRedOp_t op) {
  ReduceFn fn = nullptr;
  if (knownType(type) && knownOp(op)) fn = table.reduce[type][op];
  if (fn == nullptr) throwUnsupportedReduce(type, op);
  return fn;
}

DivideFn divideKernel(const KernelTable& table, loomDataType_t type, int divisor) {
  DivideFn fn = knownType(type) ? table.divide[type] : nullptr;
  if (fn == nullptr) {
    throwArgument(std::string("divide: unsupported datatype ") + typeName(type) + " (" +
                  std::to_string(static_cast<int>(type)) + ")");
  }
  // avg divides by the rank count; anything below 1 is a caller bug (and would make unsigned
  // division meaningless).
  if (divisor < 1) throwArgument("divide: divisor must be >= 1, got " + std::to_string(divisor));
  return fn;
}

}  // namespace

void reduce(loomDataType_t type, loomRedOp_t op, void* dst, const void* a, const void* b,
            size_t count) {
  ReduceFn fn = reduceKernel(bestKernelTable(), type, op);
  if (count > 0) fn(dst, a, b, count);
}

void divide(loomDataType_t type, void* dst, const void* src, size_t count, int divisor) {
  DivideFn fn = divideKernel(bestKernelTable(), type, divisor);
  if (count > 0) fn(dst, src, count, divisor);
}

void reduceWithIsa(HostIsa isa, loomDataType_t type, loomRedOp_t op, void* dst, const void* a,
                   const void* b, size_t count) {
  ReduceFn fn = reduceKernel(kernelTable(isa), type, op);
  if (count > 0) fn(dst, a, b, count);
}

void divideWithIsa(HostIsa isa, loomDataType_t type, void* dst, const void* src, size_t count,
                   int divisor) {
  DivideFn fn = divideKernel(kernelTable(isa), type, divisor);
  if (count > 0) fn(dst, src, count, divisor);
}

}  // namespace loom::kernels
