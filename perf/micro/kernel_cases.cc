// SPDX-License-Identifier: Apache-2.0
#include "base/datatype.h"
#include "kernel_cases.h"

#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <cstring>

#include "kernels/host/host_reduce.h"
#include "triad_loops.h"

namespace loom::micro {

using kernels::HostIsa;

std::string sizeText(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + "MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

std::string triadName(HostIsa isa, size_t bytes) {
  return std::string("triad/") + kernels::hostIsaName(isa) + "/" + sizeText(bytes);
}

std::string memcpyName(size_t bytes) { return "memcpy/" + sizeText(bytes); }

std::string reduceName(HostIsa isa, loomDataType_t type, loomRedOp_t op, size_t bytes) {
  return std::string("reduce/") + kernels::hostIsaName(isa) + "/" + typeName(type) + "/" +
         opName(op) + "/" + sizeText(bytes);
}

std::string pairedName(HostIsa isa, loomDataType_t type, size_t bytes) {
  return std::string("paired/") + kernels::hostIsaName(isa) + "/" + typeName(type) +
         "/sum/" + sizeText(bytes);
}

KernelOperands::KernelOperands(size_t bytes)
    // Byte patterns that are normal numbers in every float type (0x3c3c is 1.06 in float16,
    // 0x3c3c3c3c 0.0115 in float32), and whose products stay normal: no denormal slow paths.
    : dst_(bytes, 0), a_(bytes + kOffsetA, 0x3c), b_(bytes + kOffsetB, 0x3d) {}

std::vector<loomDataType_t> supportedTypes() {
  std::vector<loomDataType_t> types;
  for (int type = 0; type < loomNumTypes; ++type) {
    const auto value = static_cast<loomDataType_t>(type);
    if (kernels::typeSupported(value)) types.push_back(value);
  }
  return types;
}

namespace {

const HostIsa kAllIsas[] = {HostIsa::Generic, HostIsa::Avx2, HostIsa::Avx512};

// The case bodies. Each call is an out-of-line function call on the same buffers, so nothing
// can be hoisted out of the timing loop; the bytes counted are the arrays each call reads and
// writes (write-allocate traffic is not counted, for any case alike).
void triadCase(benchmark::State& state, const KernelOperands* operands, HostIsa isa, size_t bytes) {
  auto* a = reinterpret_cast<float*>(operands->dst());
  const auto* b = reinterpret_cast<const float*>(operands->a());
  const auto* c = reinterpret_cast<const float*>(operands->b());
  for (auto _ : state) {
    triad(isa, a, b, c, 3.0f, bytes / sizeof(float));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 3 * bytes));
}

void memcpyCase(benchmark::State& state, const KernelOperands* operands, size_t bytes) {
  for (auto _ : state) {
    std::memcpy(operands->dst(), operands->a(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * bytes));
}

void reduceCase(benchmark::State& state, const KernelOperands* operands, HostIsa isa,
                loomDataType_t type, loomRedOp_t op, size_t bytes) {
  const size_t count = bytes / typeSize(type);
  for (auto _ : state) {
    kernels::reduceWithIsa(isa, type, op, operands->dst(), operands->a(), operands->b(), count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 3 * bytes));
}

double threadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// A batch of sum kernel calls, then a batch of triad calls on the same buffers, in turn. On a
// shared machine the load changes from second to second, so the triad measured minutes apart
// can be 15% faster or slower; measured in alternation, both see the same conditions and
// their ratio holds. Each batch moves about 64 MiB, so even the in-cache sizes are timed over
// tens of microseconds (the thread CPU clock is a system call).
void pairedCase(benchmark::State& state, const KernelOperands* operands, HostIsa isa,
                loomDataType_t type, size_t bytes) {
  const size_t calls = std::max<size_t>(1, (size_t{64} << 20) / (3 * bytes));
  auto* a = reinterpret_cast<float*>(operands->dst());
  const auto* b = reinterpret_cast<const float*>(operands->a());
  const auto* c = reinterpret_cast<const float*>(operands->b());
  double reduceSeconds = 0;
  double triadSeconds = 0;
  for (auto _ : state) {
    const double start = threadCpuSeconds();
    for (size_t call = 0; call < calls; ++call) {
      kernels::reduceWithIsa(isa, type, loomSum, operands->dst(), operands->a(), operands->b(),
                             bytes / typeSize(type));
      benchmark::ClobberMemory();
    }
    const double middle = threadCpuSeconds();
    for (size_t call = 0; call < calls; ++call) {
      triad(isa, a, b, c, 3.0f, bytes / sizeof(float));
      benchmark::ClobberMemory();
    }
    const double end = threadCpuSeconds();
    reduceSeconds += middle - start;
    triadSeconds += end - middle;
    state.SetIterationTime(middle - start);
  }
  const double moved =
      static_cast<double>(state.iterations()) * static_cast<double>(calls * 3 * bytes);
  state.SetBytesProcessed(static_cast<int64_t>(moved));
  if (reduceSeconds > 0 && triadSeconds > 0) {
    state.counters["triad_bytes_per_second"] = benchmark::Counter(
        moved / triadSeconds, benchmark::Counter::kDefaults, benchmark::Counter::kIs1024);
    state.counters["share_of_triad"] = triadSeconds / reduceSeconds;
  }
}

bool wantOp(loomDataType_t type, loomRedOp_t op, const KernelSelection& selection) {
  return op == loomSum || type == loomFloat32 || selection.allOps;
}

}  // namespace

void registerKernelCases(const KernelOperands& operands, const KernelSelection& selection) {
  for (const SizeLevel& size : kSizeLevels) {
    for (HostIsa isa : kAllIsas) {
      if (!kernels::hostIsaAvailable(isa)) continue;
      benchmark::RegisterBenchmark(triadName(isa, size.bytes).c_str(), triadCase, &operands, isa,
                                   size.bytes);
    }
    benchmark::RegisterBenchmark(memcpyName(size.bytes).c_str(), memcpyCase, &operands, size.bytes);
    for (HostIsa isa : selection.isas) {
      for (loomDataType_t type : kPairedTypes) {
        benchmark::RegisterBenchmark(pairedName(isa, type, size.bytes).c_str(), pairedCase,
                                     &operands, isa, type, size.bytes)
            ->UseManualTime();
      }
      for (loomDataType_t type : supportedTypes()) {
        for (int op = 0; op < loomNumOps; ++op) {
          const auto value = static_cast<loomRedOp_t>(op);
          if (!wantOp(type, value, selection)) continue;
          benchmark::RegisterBenchmark(reduceName(isa, type, value, size.bytes).c_str(), reduceCase,
                                       &operands, isa, type, value, size.bytes);
        }
      }
    }
  }
}

}  // namespace loom::micro
