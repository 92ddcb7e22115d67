// SPDX-License-Identifier: Apache-2.0
#include "checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace ddp {
namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'D', 'D', 'P', '1'};

// What must match between the run that saved and the run that resumes.
struct Header {
  char magic[8];
  uint32_t strategy, precision, optimizer, layers;
  int32_t rank, ranks;       // ZeRO shards only (DDP: 0, 1)
  int64_t step, optimizerSteps;
  uint64_t ownedCount, bucketCount;
};

void writeAll(int fd, const void* data, size_t bytes, const std::string& path) {
  const char* at = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t wrote = ::write(fd, at, bytes);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) throw std::runtime_error("writing checkpoint " + path + ": " + std::strerror(errno));
    at += wrote;
    bytes -= static_cast<size_t>(wrote);
  }
}

class AtomicFile {  // a temporary file renamed over the target once complete
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)), temp_(path_ + ".tmp." + std::to_string(::getpid())) {
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot create " + temp_ + ": " + std::strerror(errno));
  }
  ~AtomicFile() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(temp_.c_str());  // not committed: leave the old checkpoint alone
    }
  }
  void write(const void* data, size_t bytes) { writeAll(fd_, data, bytes, temp_); }
  void commit() {
    if (::fsync(fd_) != 0) throw std::runtime_error("fsync " + temp_ + ": " + std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
      ::unlink(temp_.c_str());
      throw std::runtime_error("rename " + temp_ + " -> " + path_ + ": " + std::strerror(errno));
    }
  }

 private:
  std::string path_, temp_;
  int fd_ = -1;
};

bool zero(const CheckpointContext& context) { return context.options.strategy == Strategy::kZero; }

Header makeHeader(const CheckpointContext& context, long step, const OptimizerShard& shard) {
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.strategy = static_cast<uint32_t>(context.options.strategy);
  header.precision = static_cast<uint32_t>(context.options.precision);
  header.optimizer = static_cast<uint32_t>(context.options.optimizer);
  header.layers = static_cast<uint32_t>(context.widths.size());
  header.rank = zero(context) ? context.rank : 0;
  header.ranks = zero(context) ? context.ranks : 1;
  header.step = step;
  header.optimizerSteps = shard.steps();
  // ZeRO shards depend on the bucket layout; a DDP file only on the model.
  header.ownedCount = zero(context) ? shard.ownedCount() : context.layout.parameterCount();
  header.bucketCount = zero(context) ? context.layout.buckets().size() : 0;
  return header;
}

// The arrays in file order. DDP: per tensor, by name and count (padding excluded), so the file
// does not depend on the rank count; ZeRO: the compact shard arrays as they are.
template <typename Visit>
void forEachArray(const CheckpointContext& context, OptimizerShard& shard, Visit visit) {
  std::vector<float>* arrays[] = {&shard.master(), &shard.firstMoment(), &shard.secondMoment()};
  for (std::vector<float>* array : arrays) {
    if (array->empty()) continue;
    if (zero(context)) {
      visit(std::string("shard"), array->data(), array->size());
      continue;
    }
    for (const Tensor& tensor : context.layout.tensors()) visit(tensor.name, array->data() + tensor.offset, tensor.count);
  }
}

}  // namespace

std::string checkpointFile(const CheckpointContext& context, const std::string& path) {
  if (!zero(context)) return path;
  return path + ".rank" + std::to_string(context.rank) + "-of-" + std::to_string(context.ranks);
}

void saveCheckpoint(const CheckpointContext& context, const std::string& path, long step, OptimizerShard& shard) {
  if (!zero(context) && context.rank != 0) return;
  AtomicFile file(checkpointFile(context, path));
  const Header header = makeHeader(context, step, shard);
  file.write(&header, sizeof header);
  file.write(context.widths.data(), context.widths.size() * sizeof(int));
  forEachArray(context, shard, [&](const std::string& name, const float* data, size_t count) {
    const uint64_t sizes[2] = {name.size(), count};
    file.write(sizes, sizeof sizes);
    file.write(name.data(), name.size());
    file.write(data, count * sizeof(float));
  });
  file.commit();
}

long loadCheckpoint(const CheckpointContext& context, const std::string& path, OptimizerShard& shard) {
  const std::string file = checkpointFile(context, path);
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::string hint = zero(context) ? " (a ZeRO checkpoint has one file per rank: resume with the rank count "
                                       "and --bucket-mb it was saved with)"
                                     : "";
    throw std::runtime_error("cannot open checkpoint " + file + ": " + std::strerror(errno) + hint);
  }
  auto fail = [&](const std::string& why) -> std::runtime_error {
    return std::runtime_error("checkpoint " + file + ": " + why);
  };
  Header header{};
  in.read(reinterpret_cast<char*>(&header), sizeof header);
  if (!in || std::memcmp(header.magic, kMagic, sizeof kMagic) != 0) throw fail("not a ddp_trainer checkpoint");
  const Header expected = makeHeader(context, 0, shard);
  if (header.strategy != expected.strategy) throw fail("saved with another --strategy");
  if (header.precision != expected.precision) throw fail("saved with another --precision");
  if (header.optimizer != expected.optimizer) throw fail("saved with another --optimizer");
  if (header.rank != expected.rank || header.ranks != expected.ranks) {
    throw fail("a shard of rank " + std::to_string(header.rank) + " of " + std::to_string(header.ranks) +
               " ranks; this is rank " + std::to_string(expected.rank) + " of " + std::to_string(expected.ranks));
  }
  if (header.ownedCount != expected.ownedCount || header.bucketCount != expected.bucketCount) {
    throw fail("saved with another model size or --bucket-mb");
  }
  std::vector<int> widths(header.layers);
  in.read(reinterpret_cast<char*>(widths.data()), static_cast<std::streamsize>(widths.size() * sizeof(int)));
  if (!in || widths != context.widths) throw fail("saved with other --hidden widths");
  forEachArray(context, shard, [&](const std::string& name, float* data, size_t count) {
    uint64_t sizes[2] = {};
    in.read(reinterpret_cast<char*>(sizes), sizeof sizes);
    std::string stored(sizes[0] < 256 ? sizes[0] : 0, '\0');
    in.read(stored.data(), static_cast<std::streamsize>(stored.size()));
    if (!in || stored != name || sizes[1] != count) throw fail("damaged at tensor " + name);
    in.read(reinterpret_cast<char*>(data), static_cast<std::streamsize>(count * sizeof(float)));
    if (!in) throw fail("truncated in tensor " + name);
  });
  if (in.peek() != std::ifstream::traits_type::eof()) throw fail("has trailing bytes");
  shard.setSteps(header.optimizerSteps);
  return header.step;
}

}  // namespace ddp
