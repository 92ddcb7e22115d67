// SPDX-License-Identifier: Apache-2.0
#include "perf/peers/gloo_backend.h"

#include <gloo/algorithm.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/types.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "perf/peers/gloo_rendezvous.h"
#include "perf/perf_data.h"
#include "perf/perf_options.h"

namespace loom::perf {
namespace {

// Calls fn(T{}) with gloo's element type for `type` (bfloat16 has none: never called with it).
template <typename Fn>
void withGlooType(loomDataType_t type, Fn&& fn) {
  switch (type) {
    case loomInt8:
      return fn(int8_t{});
    case loomUint8:
      return fn(uint8_t{});
    case loomInt32:
      return fn(int32_t{});
    case loomUint32:
      return fn(uint32_t{});
    case loomInt64:
      return fn(int64_t{});
    case loomUint64:
      return fn(uint64_t{});
    case loomFloat16:
      return fn(gloo::float16{});
    case loomFloat32:
      return fn(float{});
    case loomFloat64:
      return fn(double{});
    default:
      return;
  }
}

// gloo's element-wise reductions; avg reduces as sum (the caller divides).
template <typename T>
gloo::AllreduceOptions::Func reduceFunction(loomRedOp_t op) {
  using Raw = void (*)(void*, const void*, const void*, size_t);
  switch (op) {
    case loomProd:
      return static_cast<Raw>(&gloo::product<T>);
    case loomMax:
      return static_cast<Raw>(&gloo::max<T>);
    case loomMin:
      return static_cast<Raw>(&gloo::min<T>);
    default:
      return static_cast<Raw>(&gloo::sum<T>);
  }
}

template <typename T>
const gloo::ReductionFunction<T>* reductionFunction(loomRedOp_t op) {
  switch (op) {
    case loomProd:
      return gloo::ReductionFunction<T>::product;
    case loomMax:
      return gloo::ReductionFunction<T>::max;
    case loomMin:
      return gloo::ReductionFunction<T>::min;
    default:
      return gloo::ReductionFunction<T>::sum;
  }
}

template <typename T>
T* typed(const void* pointer) {
  return static_cast<T*>(const_cast<void*>(pointer));
}

void* byteOffset(const void* base, size_t bytes) {
  return static_cast<char*>(const_cast<void*>(base)) + bytes;
}

class GlooBackend final : public Backend {
 public:
  GlooBackend(std::shared_ptr<gloo::Context> context, const char* tool)
      : context_(std::move(context)), tool_(tool) {}

  BackendIdentity identity() const override {
    const std::string version = std::to_string(GLOO_VERSION_MAJOR) + "." +
                                std::to_string(GLOO_VERSION_MINOR) + "." +
                                std::to_string(GLOO_VERSION_PATCH);
    return {"gloo", "gloo " + version, "Gloo " + version + " (TCP)",
            "gloo::allreduce (ring), gloo::allgather (ring), ReduceScatterHalvingDoubling "
            "(in place, block moved to NCCL's place, timed); avg = sum then a division pass "
            "(timed)"};
  }
  int rank() const override { return context_->rank; }
  int nranks() const override { return context_->size; }
  const char* unsupportedType(loomDataType_t type) const override {
    return type == loomBfloat16 ? "gloo has no bfloat16 datatype" : nullptr;
  }

  void barrier() override {
    if (nranks() == 1) return;
    guarded("gloo::barrier", [&] {
      gloo::BarrierOptions options(context_);
      gloo::barrier(options);
    });
  }
  double allReduceDouble(double value, Combine how) override {
    const loomRedOp_t op = how == Combine::kMin   ? loomMin
                           : how == Combine::kMax ? loomMax
                                                  : loomSum;
    allReduce(&value, &value, 1, loomFloat64, op);
    return value;
  }
  uint64_t sumOverRanks(uint64_t value) override {
    allReduce(&value, &value, 1, loomUint64, loomSum);
    return value;
  }
  std::vector<RankPlace> gatherPlaces(const RankPlace& mine) override {
    std::vector<RankPlace> all(nranks());
    allGather(&mine, all.data(), sizeof mine, loomUint8);
    return all;
  }

  void allReduce(const void* send, void* recv, size_t count, loomDataType_t type,
                 loomRedOp_t op) override {
    // gloo refuses 0 elements and has no pair to itself: those calls are local.
    if (count == 0) return;
    if (nranks() == 1) {
      if (send != recv) std::memcpy(recv, send, count * typeSize(type));
      return;
    }
    guarded("gloo::allreduce", [&] {
      withGlooType(type, [&](auto tag) {
        using T = decltype(tag);
        gloo::AllreduceOptions options(context_);
        options.setOutput(typed<T>(recv), count);
        if (send != recv) options.setInput(typed<T>(send), count);
        options.setReduceFunction(reduceFunction<T>(op));
        gloo::allreduce(options);
      });
    });
    if (op == loomAvg) divideInPlace(recv, count, type, nranks());
  }

  void allGather(const void* send, void* recv, size_t count, loomDataType_t type) override {
    const size_t blockBytes = count * typeSize(type);
    void* ownBlock = byteOffset(recv, rank() * blockBytes);
    if (blockBytes == 0) return;
    if (nranks() == 1) {
      if (send != ownBlock) std::memcpy(ownBlock, send, blockBytes);
      return;
    }
    guarded("gloo::allgather", [&] {
      // Bytes: all-gather only moves data, and gloo's chunking does not depend on the type.
      gloo::AllgatherOptions options(context_);
      if (send != ownBlock) options.setInput(typed<uint8_t>(send), blockBytes);
      options.setOutput(typed<uint8_t>(recv), blockBytes * nranks());
      gloo::allgather(options);
    });
  }

  void reduceScatter(const void* send, void* recv, size_t count, loomDataType_t type,
                     loomRedOp_t op) override {
    const size_t blockBytes = count * typeSize(type);
    if (blockBytes == 0) return;
    if (nranks() > 1) {
      guarded("gloo::ReduceScatterHalvingDoubling", [&] {
        withGlooType(type, [&](auto tag) {
          using T = decltype(tag);
          algorithmFor<T>(send, count, type, op).run();
        });
      });
    }
    // The rank's block is at the start of sendbuff now.
    if (recv != send) std::memmove(recv, send, blockBytes);
    if (op == loomAvg) divideInPlace(recv, count, type, nranks());
  }

 private:
  // The reduce-scatter of one (buffer, count, type, op), built on first use and kept while
  // the driver keeps calling with it: building registers transport buffers and allocates
  // scratch space, which gloo's API expects to happen once, outside the timed loop.
  template <typename T>
  gloo::Algorithm& algorithmFor(const void* buffer, size_t count, loomDataType_t type,
                                loomRedOp_t op) {
    const size_t total = count * nranks();
    if (total > size_t{INT32_MAX}) {
      failFatally(tool_, "count " + std::to_string(total) + " exceeds gloo's int count");
    }
    const ScatterKey key{buffer, count, type, op == loomAvg ? loomSum : op};
    if (!scatter_ || !(key == scatterKey_)) {
      scatter_.reset();  // unregister the old buffers first
      scatter_ = std::make_unique<gloo::ReduceScatterHalvingDoubling<T>>(
          context_, std::vector<T*>{typed<T>(buffer)}, static_cast<int>(total),
          std::vector<int>(nranks(), static_cast<int>(count)), reductionFunction<T>(key.op));
      scatterKey_ = key;
    }
    return *scatter_;
  }

  template <typename Call>
  void guarded(const char* what, Call&& call) {
    try {
      call();
    } catch (const std::exception& error) {
      failFatally(tool_, std::string(what) + " failed: " + error.what());
    }
  }

  struct ScatterKey {
    const void* buffer = nullptr;
    size_t count = 0;
    loomDataType_t type = loomFloat32;
    loomRedOp_t op = loomSum;
    bool operator==(const ScatterKey&) const = default;
  };

  std::shared_ptr<gloo::Context> context_;
  const char* tool_;
  std::unique_ptr<gloo::Algorithm> scatter_;
  ScatterKey scatterKey_;
};

// Connects rank `rank` of `size` through `store`; a failure ends the process.
std::shared_ptr<gloo::Context> connect(gloo::rendezvous::Store& store,
                                       std::shared_ptr<gloo::transport::Device>& device, int rank,
                                       int size, const Options& options, const char* tool) {
  try {
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    if (options.timeoutSeconds > 0) {
      context->setTimeout(std::chrono::seconds(options.timeoutSeconds));
    }
    context->connectFullMesh(store, device);
    return context;
  } catch (const std::exception& error) {
    failFatally(tool,
                "rank " + std::to_string(rank) + ": gloo connectFullMesh failed: " + error.what());
  }
}

}  // namespace

std::vector<std::unique_ptr<Backend>> createGlooBackends(const Options& options, const char* tool) {
  std::shared_ptr<gloo::transport::Device> device = createTcpDevice(tool);
  std::vector<std::unique_ptr<Backend>> backends;
  const GlooJob job = findGlooJob(tool);
  if (job.found) {
    if (options.threads > 1) {
      failUsage(tool, "-t " + std::to_string(options.threads) +
                          " cannot be combined with a launcher (one process per rank there)");
    }
    StoreDirectory directory(job.storePath, job.rank == 0, tool);
    gloo::rendezvous::FileStore store(directory.path());
    backends.push_back(std::make_unique<GlooBackend>(
        connect(store, device, job.rank, job.size, options, tool), tool));
    backends.back()->barrier();  // every rank has read the store: it may go
    directory.remove();
    return backends;
  }
  // -t N (or a plain start: one rank): N ranks as threads, meeting in an in-process store.
  gloo::rendezvous::HashStore store;
  std::vector<std::shared_ptr<gloo::Context>> contexts(options.threads);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < options.threads; ++t) {
      threads.emplace_back(
          [&, t] { contexts[t] = connect(store, device, t, options.threads, options, tool); });
    }
  }
  for (auto& context : contexts) backends.push_back(std::make_unique<GlooBackend>(context, tool));
  return backends;
}

}  // namespace loom::perf
