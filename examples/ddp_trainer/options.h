// SPDX-License-Identifier: Apache-2.0
// The trainer's command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddp {

enum class Strategy { kDdp, kZero };
enum class Precision { kFp32, kBf16 };
enum class OptimizerKind { kAdamW, kSgd };

struct Options {
  int steps = 0;                // optimizer steps; 0: kDefaultEpochs epochs' worth
  uint64_t seed = 1;
  Strategy strategy = Strategy::kDdp;
  Precision precision = Precision::kFp32;
  double bucketMb = 1.0;        // gradient bucket size cap, MiB
  int accumulation = 1;         // micro-batches per optimizer step
  int globalBatch = 64;         // samples per optimizer step, over all ranks and micro-batches
  std::vector<int> hidden = {1024, 1024};
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  double learningRate = 0;      // 0: the optimizer's default
  double momentum = 0.9;        // SGD
  double weightDecay = 0.01;    // decoupled (AdamW) or L2-style added to the SGD step
  bool overlap = true;          // all-reduce buckets during backward (false: after it)
  bool checkIdentical = false;  // verify after every step that all ranks hold the same bits
  std::string savePath, resumePath, jsonPath, dataPath;

  static constexpr int kDefaultEpochs = 10;
};

// Parses argv; on -h prints usage and exits 0; on a bad flag throws std::invalid_argument.
Options parseOptions(int argc, char** argv);
const char* usage();
const char* name(Strategy strategy);
const char* name(Precision precision);
const char* name(OptimizerKind optimizer);

}  // namespace ddp
