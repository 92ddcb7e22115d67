// SPDX-License-Identifier: Apache-2.0
#include "process_group_loom.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include <Python.h>
#include <pybind11/pybind11.h>

#include "c10d_store.h"
#include "completer.h"
#include "stream_work.h"
#include "tensor_args.h"
#include "user_errors.h"

namespace loom_torch {

namespace {

size_t elements(const at::Tensor& tensor) { return static_cast<size_t>(tensor.numel()); }

// Elements per row of dim 0: the unit of alltoall's split sizes.
size_t rowElements(const at::Tensor& tensor) {
  return tensor.dim() == 0 || tensor.size(0) == 0 ? 1 : elements(tensor) / static_cast<size_t>(tensor.size(0));
}

// One flat contiguous tensor of `list` (the rank-ordered blocks of a collective).
at::Tensor flatten(const std::vector<at::Tensor>& list) {
  std::vector<at::Tensor> flat;
  flat.reserve(list.size());
  for (const at::Tensor& tensor : list) flat.push_back(tensor.reshape({-1}));
  return at::cat(flat);
}

// Copies consecutive blocks of `flat` into the tensors of `list`.
void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& list) {
  int64_t offset = 0;
  for (const at::Tensor& tensor : list) {
    tensor.copy_(flat.narrow(0, offset, tensor.numel()).view(tensor.sizes()));
    offset += tensor.numel();
  }
}

// Loom's groups as a scope: End runs everything issued since Start, once.
class Group {
 public:
  Group() {
    TORCH_CHECK(loomGroupStart() == loomSuccess, "loom: could not open a group of operations: ", inUserTerms(loomGetLastError(nullptr)));
  }
  loomResult_t end() {
    ended_ = true;
    return loomGroupEnd();
  }
  ~Group() {
    if (!ended_) loomGroupEnd();  // an exception left the group: End runs nothing after a failure
  }

 private:
  bool ended_ = false;
};

// The work keeps the buffer Loom writes; a non-contiguous output gets it copied back at the end.
void writeBackAtEnd(StreamWork& work, const Output& out) {
  work.keep(out.buffer());
  if (out.needsCopyBack()) work.then([out] { out.finish(); });
}

}  // namespace

ProcessGroupLoom::ProcessGroupLoom(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : BackendBase(rank, size) {
  completer_ = std::make_unique<Completer>();
  C10dStore rendezvous(store);
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = static_cast<int>(std::clamp<int64_t>(timeout.count(), 1, std::numeric_limits<int>::max()));
  const loomResult_t result = loomCommInitRankStore(&comm_, size, rank, rendezvous.callbacks(), "", &config);
  TORCH_CHECK(result == loomSuccess, "loom: init of rank ", rank, " of ", size, " failed: ", inUserTerms(loomGetLastError(nullptr)));
  if (loomStreamCreate(&stream_) != loomSuccess) {
    const std::string message = inUserTerms(loomGetLastError(nullptr));
    loomCommDestroy(comm_);
    comm_ = nullptr;
    TORCH_CHECK(false, "loom: rank ", rank, ": could not create its stream: ", message);
  }
}

ProcessGroupLoom::~ProcessGroupLoom() {
  // Work still on the stream completes first (its futures may run Python callbacks, so the
  // GIL is let go meanwhile); an error there was already the work's.
  auto drain = [this] {
    if (stream_ != nullptr) {
      loomStreamSynchronize(stream_);
      loomStreamDestroy(stream_);
    }
    completer_.reset();  // the futures' callbacks finish (but the one running this, if any)
    if (comm_ != nullptr) loomCommDestroy(comm_);
  };
  if (Py_IsInitialized() && PyGILState_Check()) {
    pybind11::gil_scoped_release release;
    drain();
  } else {
    drain();
  }
}

c10::intrusive_ptr<StreamWork> ProcessGroupLoom::work(c10d::OpType type, const char* operation,
                                                      std::vector<at::Tensor> outputs) const {
  return c10::make_intrusive<StreamWork>(type, operation, comm_, completer_.get(), std::move(outputs));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::launch(const c10::intrusive_ptr<StreamWork>& work) {
  if (coalescing_ && std::this_thread::get_id() == coalescingThread_) {
    coalesced_.push_back(work);  // its calls are in the open group: it completes after the group
  } else {
    StreamWork::launch(work, stream_);
  }
  return work;
}

void ProcessGroupLoom::startCoalescing() {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  TORCH_CHECK(!coalescing_, "loom: a coalescing window is already open on this process group");
  check(loomGroupStart(), "start of coalescing");
  coalescing_ = true;
  coalescingThread_ = std::this_thread::get_id();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::finishCoalescing() {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  TORCH_CHECK(coalescing_ && std::this_thread::get_id() == coalescingThread_,
              "loom: end of coalescing without its start on this thread");
  coalescing_ = false;
  std::vector<c10::intrusive_ptr<StreamWork>> works = std::move(coalesced_);
  coalesced_.clear();
  if (loomGroupEnd() != loomSuccess) {
    // Nothing of the group ran (an operation inside it failed its checks): its work fails.
    const std::string message = std::string("loom: coalesced operations failed: ") + inUserTerms(loomGetLastError(comm_));
    for (const auto& each : works) each->abandon(message);
    TORCH_CHECK(false, message);
  }
  for (const auto& each : works) StreamWork::launch(each, stream_);
  auto whole = work(c10d::OpType::UNKNOWN, "coalesced operations", {});
  StreamWork::launch(whole, stream_);
  return whole;
}

void ProcessGroupLoom::check(loomResult_t result, const char* operation) const {
  TORCH_CHECK(result == loomSuccess, "loom: ", operation, " failed: ", inUserTerms(loomGetLastError(comm_)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const Output out(single(tensors, "broadcast", "tensors"));
  const at::Tensor& buffer = out.buffer();
  check(loomBroadcast(buffer.data_ptr(), buffer.data_ptr(), elements(buffer), loomType(buffer, "broadcast"),
                      static_cast<int>(opts.rootRank), comm_, stream_),
        "broadcast");
  auto done = work(c10d::OpType::BROADCAST, "broadcast", tensors);
  writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const Output out(single(tensors, "allreduce", "tensors"));
  const at::Tensor& buffer = out.buffer();
  auto op = std::make_unique<ReduceOpFor>(opts.reduceOp, buffer, comm_, "allreduce");
  check(loomAllReduce(buffer.data_ptr(), buffer.data_ptr(), elements(buffer), loomType(buffer, "allreduce"), op->op(),
                      comm_, stream_),
        "allreduce");
  auto done = work(c10d::OpType::ALLREDUCE, "allreduce", tensors);
  done->keep(std::move(op));
  writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  std::vector<Output> outs;
  outs.reserve(tensors.size());
  std::vector<std::unique_ptr<ReduceOpFor>> ops;
  for (at::Tensor& tensor : tensors) {
    requireCpu(tensor, "allreduce_coalesced", "tensors");
    outs.emplace_back(tensor);
    ops.push_back(std::make_unique<ReduceOpFor>(opts.reduceOp, outs.back().buffer(), comm_, "allreduce_coalesced"));
  }
  Group group;
  for (size_t i = 0; i < outs.size(); ++i) {
    at::Tensor& buffer = outs[i].buffer();
    check(loomAllReduce(buffer.data_ptr(), buffer.data_ptr(), elements(buffer),
                        loomType(buffer, "allreduce_coalesced"), ops[i]->op(), comm_, stream_),
          "allreduce_coalesced");
  }
  check(group.end(), "allreduce_coalesced");
  auto done = work(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", tensors);
  for (auto& op : ops) done->keep(std::move(op));
  for (const Output& out : outs) writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const Output out(single(tensors, "reduce", "tensors"));
  const at::Tensor& buffer = out.buffer();
  auto op = std::make_unique<ReduceOpFor>(opts.reduceOp, buffer, comm_, "reduce");
  check(loomReduce(buffer.data_ptr(), buffer.data_ptr(), elements(buffer), loomType(buffer, "reduce"), op->op(),
                   static_cast<int>(opts.rootRank), comm_, stream_),
        "reduce");
  auto done = work(c10d::OpType::REDUCE, "reduce", tensors);
  done->keep(std::move(op));
  writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions&) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const at::Tensor input = single(inputs, "allgather", "input_tensor").contiguous();
  TORCH_CHECK(outputs.size() == 1, "loom: allgather: output_tensor_lists must hold one list (got ", outputs.size(), ")");
  requireList(outputs.front(), static_cast<size_t>(getSize()), input, "allgather", "output_tensor_list");
  const at::Tensor flat = at::empty({input.numel() * getSize()}, input.options());
  check(loomAllGather(input.data_ptr(), flat.data_ptr(), elements(input), loomType(input, "allgather"), comm_, stream_),
        "allgather");
  auto done = work(c10d::OpType::ALLGATHER, "allgather", outputs.front());
  done->keep(input);
  done->then([flat, list = outputs.front()] { unflatten(flat, list); });
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions&) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  requireCpu(input, "all_gather_into_tensor", "input_tensor");
  requireCpu(output, "all_gather_into_tensor", "output_tensor");
  TORCH_CHECK(output.scalar_type() == input.scalar_type() && output.numel() == input.numel() * getSize(),
              "loom: all_gather_into_tensor: output_tensor must hold world_size (", getSize(), ") x ", input.numel(),
              " elements of ", input.scalar_type(), ", it holds ", output.numel(), " of ", output.scalar_type());
  const at::Tensor in = input.contiguous();
  const Output out(output);
  check(loomAllGather(in.data_ptr(), out.buffer().data_ptr(), elements(in), loomType(in, "all_gather_into_tensor"),
                      comm_, stream_),
        "all_gather_into_tensor");
  auto done = work(c10d::OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {output});
  done->keep(in);
  writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                                     std::vector<at::Tensor>& inputs,
                                                                     const c10d::AllgatherOptions&) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  TORCH_CHECK(outputLists.size() == static_cast<size_t>(getSize()), "loom: allgather_coalesced: output_lists must hold ",
              getSize(), " lists (one per rank), got ", outputLists.size());
  std::vector<at::Tensor> ins;
  std::vector<at::Tensor> flats;
  for (size_t i = 0; i < inputs.size(); ++i) {
    requireCpu(inputs[i], "allgather_coalesced", "input_list");
    ins.push_back(inputs[i].contiguous());
    flats.push_back(at::empty({inputs[i].numel() * getSize()}, inputs[i].options()));
  }
  std::vector<at::Tensor> outputs;
  for (size_t rank = 0; rank < outputLists.size(); ++rank) {
    TORCH_CHECK(outputLists[rank].size() == inputs.size(), "loom: allgather_coalesced: output_lists[", rank, "] holds ",
                outputLists[rank].size(), " tensors, input_list ", inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      requireLike(outputLists[rank][i], inputs[i], "allgather_coalesced",
                  "output_lists[" + std::to_string(rank) + "][" + std::to_string(i) + "]");
      outputs.push_back(outputLists[rank][i]);
    }
  }
  Group group;
  for (size_t i = 0; i < ins.size(); ++i) {
    check(loomAllGather(ins[i].data_ptr(), flats[i].data_ptr(), elements(ins[i]), loomType(ins[i], "allgather_coalesced"),
                        comm_, stream_),
          "allgather_coalesced");
  }
  check(group.end(), "allgather_coalesced");
  auto done = work(c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced", outputs);
  for (const at::Tensor& in : ins) done->keep(in);
  // outputs holds output_lists rank by rank: rank r's block of flats[i] goes to outputs[r * inputs + i].
  done->then([flats, outputs] {
    const size_t perRank = flats.size();
    for (size_t slot = 0; slot < outputs.size(); ++slot) {
      const at::Tensor& flat = flats[slot % perRank];
      const int64_t block = outputs[slot].numel();
      outputs[slot].copy_(flat.narrow(0, static_cast<int64_t>(slot / perRank) * block, block).view(outputs[slot].sizes()));
    }
  });
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const at::Tensor input = single(inputs, "gather", "tensor").contiguous();
  const bool root = opts.rootRank == getRank();
  at::Tensor flat;
  if (root) {
    TORCH_CHECK(outputs.size() == 1, "loom: gather: gather_list must be given on the root (rank ", opts.rootRank, ")");
    requireList(outputs.front(), static_cast<size_t>(getSize()), input, "gather", "gather_list");
    flat = at::empty({input.numel() * getSize()}, input.options());
  } else {
    TORCH_CHECK(outputs.empty() || outputs.front().empty(), "loom: gather: gather_list must be empty off the root");
  }
  check(loomGather(input.data_ptr(), root ? flat.data_ptr() : nullptr, elements(input), loomType(input, "gather"),
                   static_cast<int>(opts.rootRank), comm_, stream_),
        "gather");
  auto done = work(c10d::OpType::GATHER, "gather", root ? outputs.front() : std::vector<at::Tensor>{});
  done->keep(input);
  if (root) done->then([flat, list = outputs.front()] { unflatten(flat, list); });
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const Output out(single(outputs, "scatter", "tensor"));
  const at::Tensor& buffer = out.buffer();
  const bool root = opts.rootRank == getRank();
  at::Tensor flat;
  if (root) {
    TORCH_CHECK(inputs.size() == 1, "loom: scatter: scatter_list must be given on the root (rank ", opts.rootRank, ")");
    requireList(inputs.front(), static_cast<size_t>(getSize()), buffer, "scatter", "scatter_list");
    flat = flatten(inputs.front());
  } else {
    TORCH_CHECK(inputs.empty() || inputs.front().empty(), "loom: scatter: scatter_list must be empty off the root");
  }
  check(loomScatter(root ? flat.data_ptr() : nullptr, buffer.data_ptr(), elements(buffer), loomType(buffer, "scatter"),
                    static_cast<int>(opts.rootRank), comm_, stream_),
        "scatter");
  auto done = work(c10d::OpType::SCATTER, "scatter", outputs);
  if (root) done->keep(flat);
  writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const Output out(single(outputs, "reduce_scatter", "output"));
  const at::Tensor& buffer = out.buffer();
  TORCH_CHECK(inputs.size() == 1, "loom: reduce_scatter: input_list must be one list (got ", inputs.size(), ")");
  requireList(inputs.front(), static_cast<size_t>(getSize()), buffer, "reduce_scatter", "input_list");
  const at::Tensor flat = flatten(inputs.front());
  auto op = std::make_unique<ReduceOpFor>(opts.reduceOp, buffer, comm_, "reduce_scatter");
  check(loomReduceScatter(flat.data_ptr(), buffer.data_ptr(), elements(buffer), loomType(buffer, "reduce_scatter"),
                          op->op(), comm_, stream_),
        "reduce_scatter");
  auto done = work(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", outputs);
  done->keep(std::move(op));
  done->keep(flat);
  writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  requireCpu(input, "reduce_scatter_tensor", "input");
  requireCpu(output, "reduce_scatter_tensor", "output");
  TORCH_CHECK(output.scalar_type() == input.scalar_type() && input.numel() == output.numel() * getSize(),
              "loom: reduce_scatter_tensor: input must hold world_size (", getSize(), ") x ", output.numel(),
              " elements of ", output.scalar_type(), ", it holds ", input.numel(), " of ", input.scalar_type());
  const at::Tensor in = input.contiguous();
  const Output out(output);
  auto op = std::make_unique<ReduceOpFor>(opts.reduceOp, out.buffer(), comm_, "reduce_scatter_tensor");
  check(loomReduceScatter(in.data_ptr(), out.buffer().data_ptr(), elements(output),
                          loomType(output, "reduce_scatter_tensor"), op->op(), comm_, stream_),
        "reduce_scatter_tensor");
  auto done = work(c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {output});
  done->keep(std::move(op));
  done->keep(in);
  writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& outputSplitSizes,
                                                               std::vector<int64_t>& inputSplitSizes,
                                                               const c10d::AllToAllOptions&) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  requireCpu(input, "all_to_all_single", "input");
  requireCpu(output, "all_to_all_single", "output");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "loom: all_to_all_single: output has dtype ",
              output.scalar_type(), ", input ", input.scalar_type());
  const size_t n = static_cast<size_t>(getSize());
  const at::Tensor in = input.contiguous();
  Output out(output);
  const loomDataType_t type = loomType(in, "all_to_all_single");
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % getSize() == 0,
                "loom: all_to_all_single: without split sizes, input and output must hold the same number of "
                "elements, divisible by world_size (",
                getSize(), "); they hold ", input.numel(), " and ", output.numel());
    check(loomAlltoAll(in.data_ptr(), out.buffer().data_ptr(), elements(in) / n, type, comm_, stream_),
          "all_to_all_single");
    auto done = work(c10d::OpType::ALLTOALL_BASE, "all_to_all_single", {output});
    done->keep(in);
    writeBackAtEnd(*done, out);
    return launch(done);
  }
  // Split sizes count rows of dim 0; Loom counts elements.
  auto layout = [&](std::vector<int64_t>& splits, const at::Tensor& tensor, const char* argument,
                    std::vector<size_t>& counts, std::vector<size_t>& displs) {
    const int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
    if (splits.empty()) splits.assign(n, rows / static_cast<int64_t>(n));
    TORCH_CHECK(splits.size() == n, "loom: all_to_all_single: ", argument, " must have world_size (", n,
                ") entries, has ", splits.size());
    const size_t row = rowElements(tensor);
    size_t offset = 0;
    for (size_t peer = 0; peer < n; ++peer) {
      TORCH_CHECK(splits[peer] >= 0, "loom: all_to_all_single: ", argument, "[", peer, "] is negative");
      counts[peer] = static_cast<size_t>(splits[peer]) * row;
      displs[peer] = offset;
      offset += counts[peer];
    }
    TORCH_CHECK(offset == elements(tensor), "loom: all_to_all_single: ", argument, " covers ", offset,
                " elements, the tensor holds ", tensor.numel());
  };
  std::vector<size_t> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
  layout(inputSplitSizes, in, "input_split_sizes", sendCounts, sendDispls);
  layout(outputSplitSizes, out.buffer(), "output_split_sizes", recvCounts, recvDispls);
  check(loomAlltoAllv(in.data_ptr(), sendCounts.data(), sendDispls.data(), out.buffer().data_ptr(), recvCounts.data(),
                      recvDispls.data(), type, comm_, stream_),
        "all_to_all_single");
  auto done = work(c10d::OpType::ALLTOALL_BASE, "all_to_all_single", {output});
  done->keep(in);
  writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs, const c10d::AllToAllOptions&) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const size_t n = static_cast<size_t>(getSize());
  TORCH_CHECK(inputs.size() == n && outputs.size() == n, "loom: all_to_all: input_tensor_list and output_tensor_list must",
              " hold world_size (", n, ") tensors, they hold ", inputs.size(), " and ", outputs.size());
  std::vector<size_t> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
  size_t sent = 0, received = 0;
  for (size_t peer = 0; peer < n; ++peer) {
    requireCpu(inputs[peer], "all_to_all", "input_tensor_list");
    requireCpu(outputs[peer], "all_to_all", "output_tensor_list");
    TORCH_CHECK(inputs[peer].scalar_type() == inputs[0].scalar_type() &&
                    outputs[peer].scalar_type() == inputs[0].scalar_type(),
                "loom: all_to_all: every tensor must have one dtype (", inputs[0].scalar_type(), ")");
    sendCounts[peer] = elements(inputs[peer]);
    sendDispls[peer] = sent;
    sent += sendCounts[peer];
    recvCounts[peer] = elements(outputs[peer]);
    recvDispls[peer] = received;
    received += recvCounts[peer];
  }
  const at::Tensor flatIn = flatten(inputs);
  const at::Tensor flatOut = at::empty({static_cast<int64_t>(received)}, inputs[0].options());
  check(loomAlltoAllv(flatIn.data_ptr(), sendCounts.data(), sendDispls.data(), flatOut.data_ptr(), recvCounts.data(),
                      recvDispls.data(), loomType(flatIn, "all_to_all"), comm_, stream_),
        "all_to_all");
  auto done = work(c10d::OpType::ALLTOALL, "all_to_all", outputs);
  done->keep(flatIn);
  done->then([flatOut, list = outputs] { unflatten(flatOut, list); });
  return launch(done);
}

// Loom matches the messages of a pair of ranks in issue order and has no tags: a tag other than
// 0 could pair messages that torch would not, so it is refused rather than ignored.
c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  TORCH_CHECK(tag == 0, "loom: send: tag ", tag, " is not supported: messages between two ranks match in the order they",
              " are posted; use tag 0");
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const at::Tensor buffer = single(tensors, "send", "tensor").contiguous();
  check(loomSend(buffer.data_ptr(), elements(buffer), loomType(buffer, "send"), dstRank, comm_, stream_), "send");
  auto done = work(c10d::OpType::SEND, "send", {});
  done->keep(buffer);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  TORCH_CHECK(tag == 0, "loom: recv: tag ", tag, " is not supported: messages between two ranks match in the order they",
              " are posted; use tag 0");
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  const Output out(single(tensors, "recv", "tensor"));
  check(loomRecv(out.buffer().data_ptr(), elements(out.buffer()), loomType(out.buffer(), "recv"), srcRank, comm_, stream_),
        "recv");
  auto done = work(c10d::OpType::RECV, "recv", tensors);
  writeBackAtEnd(*done, out);
  return launch(done);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false, "loom: recv from any source is not supported: Loom's messages name their sender; pass src=");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::barrier(const c10d::BarrierOptions&) {
  const std::lock_guard<std::mutex> issuing(issueMutex_);
  check(loomBarrier(comm_, stream_), "barrier");
  return launch(work(c10d::OpType::BARRIER, "barrier", {}));
}

}  // namespace loom_torch
