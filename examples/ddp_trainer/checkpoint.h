// SPDX-License-Identifier: Apache-2.0
// Checkpoints: everything a run needs to continue bit for bit — the step reached, the fp32
// master weights and the optimizer state.
//
// DDP: rank 0 writes one file, PATH, with each tensor by name (so any rank count can resume
// it). ZeRO: each rank writes its own shard, PATH.rank<r>-of-<n>; resuming needs the same rank
// count and bucket size. Files are written to a temporary name, synced and renamed, so a crash
// leaves the previous checkpoint intact.
#pragma once

#include <string>

#include "optimizer_shard.h"
#include "options.h"
#include "parameter_layout.h"

namespace ddp {

struct CheckpointContext {
  const Options& options;
  const std::vector<int>& widths;
  const ParameterLayout& layout;
  int rank, ranks;
};

// The file this rank writes or reads (ZeRO: its shard's file).
std::string checkpointFile(const CheckpointContext& context, const std::string& path);

// Writes this rank's part (DDP: rank 0 only; others return at once). Throws on I/O errors.
void saveCheckpoint(const CheckpointContext& context, const std::string& path, long step,
                    OptimizerShard& shard);

// Loads into shard; returns the step the checkpoint was taken at. Throws std::runtime_error
// when the file is missing, damaged, or from a different model, optimizer or strategy.
long loadCheckpoint(const CheckpointContext& context, const std::string& path, OptimizerShard& shard);

}  // namespace ddp
