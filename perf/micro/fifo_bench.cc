// SPDX-License-Identifier: Apache-2.0
// The shm transport between two processes (this one and a forked child), with Google
// Benchmark:
//   shm_pingpong/<bytes>       round trip of one message and its echo, 8 B .. 64 KiB; the
//                              time is the round trip, one_way_latency half of it
//   shm_stream/copy/<bytes>    one direction, 1 .. 64 MiB per iteration in slot-sized
//                              messages, copied out of the slots by the receiver (as a
//                              collective's copy step), then an 8-byte acknowledgement
//   shm_stream/reduce/<bytes>  the same, but the receiver adds each piece, straight from the
//                              slot, to a local float32 array (as an all-reduce step does)
//
//   build/perf/micro/fifo_bench [--pin=no] [--slot_bytes=131072] [--slots=8]
//                               [--benchmark_filter=...]
//
// By default this process is pinned to the first CPU it may use and the child to the second,
// so the two always run in parallel and never migrate; --pin=no leaves placement to the
// scheduler. Times are wall-clock (the sides sleep while they wait).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "aligned_buffer.h"
#include "base/version.h"
#include "kernels/host/host_reduce.h"
#include "micro_flags.h"
#include "recording_reporter.h"
#include "shm_peer.h"

namespace {

using loom::micro::AlignedBuffer;
using loom::micro::ShmEndpoint;
using loom::micro::ShmPairOptions;
using loom::micro::ShmPeerProcess;

constexpr size_t kAckBytes = 8;
constexpr int kWarmupRoundTrips = 100;

// Receives into a buffer at the piece's offset: the executor's copy step.
class CopySink final : public loom::transport::RecvSink {
 public:
  explicit CopySink(char* destination) : destination_(destination) {}
  void deliver(size_t offset, const void* data, size_t bytes) override {
    std::memcpy(destination_ + offset, data, bytes);
  }

 private:
  char* destination_;
};

// destination = local + piece, in float32, reading the piece in place in the shm slot: the
// executor's reduce step.
class ReduceSink final : public loom::transport::RecvSink {
 public:
  ReduceSink(char* destination, const char* local) : destination_(destination), local_(local) {}
  void deliver(size_t offset, const void* data, size_t bytes) override {
    loom::kernels::reduce(loomFloat32, loomSum, destination_ + offset, local_ + offset, data,
                          bytes / sizeof(float));
  }

 private:
  char* destination_;
  const char* local_;
};

// Forwards to another sink and remembers the first byte of the message as sent (before a
// reducing sink changes it).
class FirstByteSink final : public loom::transport::RecvSink {
 public:
  explicit FirstByteSink(loom::transport::RecvSink* inner) : inner_(inner) {}
  void deliver(size_t offset, const void* data, size_t bytes) override {
    if (offset == 0) first_ = *static_cast<const char*>(data);
    inner_->deliver(offset, data, bytes);
  }
  char first() const { return first_; }

 private:
  loom::transport::RecvSink* inner_;
  char first_ = 0;
};

// The first byte of each message (or transfer) tells the child whether another follows.
constexpr char kMore = 1;
constexpr char kLast = 0;

void pingPong(benchmark::State& state, const ShmPairOptions* options) {
  const auto bytes = static_cast<size_t>(state.range(0));
  try {
    ShmPeerProcess peer(*options, [bytes](ShmEndpoint& endpoint) {
      AlignedBuffer echo(bytes, 0);
      CopySink sink(echo.data());
      do {
        endpoint.receive(bytes, &sink);
        endpoint.send(echo.data(), bytes);
      } while (echo.data()[0] == kMore);
    });
    AlignedBuffer message(bytes, kMore);
    CopySink sink(message.data());
    ShmEndpoint& endpoint = peer.endpoint();
    auto roundTrip = [&] {
      endpoint.send(message.data(), bytes);
      endpoint.receive(bytes, &sink);
    };
    for (int i = 0; i < kWarmupRoundTrips; ++i) roundTrip();
    for (auto _ : state) roundTrip();
    message.data()[0] = kLast;
    roundTrip();
    peer.join();
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * bytes));
  // Seconds per one-way trip: the inverse of one-way trips per second.
  state.counters["one_way_latency"] =
      benchmark::Counter(2.0 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

enum class StreamSink { Copy, Reduce };

// `total` bytes one way as consecutive messages of at most `piece` bytes, then an
// acknowledgement back; the child stops after a transfer whose first byte is kLast.
void stream(benchmark::State& state, const ShmPairOptions* options, StreamSink kind) {
  const auto total = static_cast<size_t>(state.range(0));
  const size_t piece = options->shm.slotBytes;
  try {
    ShmPeerProcess peer(*options, [total, piece, kind](ShmEndpoint& endpoint) {
      AlignedBuffer destination(total, 0);
      // 0x3c3c3c3c is a normal float32 (0.0115): no denormal slow path in the reduction.
      AlignedBuffer local(kind == StreamSink::Reduce ? total : 0, 0x3c);
      AlignedBuffer ack(kAckBytes, 0);
      char first = kMore;
      do {
        for (size_t offset = 0; offset < total; offset += piece) {
          // Each message arrives at offset 0 of itself: the sinks point at its place.
          CopySink copy(destination.data() + offset);
          ReduceSink reduce(destination.data() + offset, local.data() + offset);
          loom::transport::RecvSink* sink = &copy;
          if (kind == StreamSink::Reduce) sink = &reduce;
          FirstByteSink flagged(sink);
          endpoint.receive(std::min(piece, total - offset), &flagged);
          if (offset == 0) first = flagged.first();
        }
        endpoint.send(ack.data(), kAckBytes);
      } while (first == kMore);
    });
    // 0x3d3d3d3d is a normal float32 too; the first byte is overwritten by kMore / kLast, which
    // leaves the first float normal as well.
    AlignedBuffer source(total, 0x3d);
    source.data()[0] = kMore;
    AlignedBuffer ack(kAckBytes, 0);
    CopySink ackSink(ack.data());
    ShmEndpoint& endpoint = peer.endpoint();
    auto transfer = [&] {
      for (size_t offset = 0; offset < total; offset += piece) {
        endpoint.send(source.data() + offset, std::min(piece, total - offset));
      }
      endpoint.receive(kAckBytes, &ackSink);
    };
    transfer();  // warm-up: the child has faulted its buffers in and is waiting
    for (auto _ : state) transfer();
    source.data()[0] = kLast;
    transfer();
    peer.join();
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * total));
}

void registerBenchmarks(const ShmPairOptions& options) {
  benchmark::RegisterBenchmark("shm_pingpong", pingPong, &options)
      ->RangeMultiplier(8)
      ->Range(8, 64 << 10)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  for (auto [name, kind] : {std::pair{"shm_stream/copy", StreamSink::Copy},
                            std::pair{"shm_stream/reduce", StreamSink::Reduce}}) {
    benchmark::RegisterBenchmark(name, stream, &options, kind)
        ->RangeMultiplier(4)
        ->Range(1 << 20, 64 << 20)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::micro;
  loom::exitOnVersionFlag(argc, argv, "fifo_bench");
  const MicroFlags flags(argc, argv, {"pin", "slot_bytes", "slots"});
  ShmPairOptions options = planCpus(flags.boolean("pin", true));
  options.shm.slotBytes =
      std::stoul(flags.value("slot_bytes", std::to_string(options.shm.slotBytes)));
  options.shm.slotCount = std::stoi(flags.value("slots", std::to_string(options.shm.slotCount)));

  auto reporter = RecordingReporter::forCommandLine(argc, argv);
  benchmark::Initialize(&argc, argv, printHelp);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    pinToCpu(options.parentCpu);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  benchmark::AddCustomContext("pinning",
                              options.childCpu < 0
                                  ? std::string("none")
                                  : "this process on CPU " + std::to_string(options.parentCpu) +
                                        ", its peer on CPU " + std::to_string(options.childCpu));
  benchmark::AddCustomContext("shm_slots", std::to_string(options.shm.slotCount) + " x " +
                                               std::to_string(options.shm.slotBytes) + " bytes");
  registerBenchmarks(options);
  benchmark::RunSpecifiedBenchmarks(reporter.get());
  benchmark::Shutdown();
  return reporter->anyError() ? 1 : 0;  // so a smoke run fails when a peer did
}
