// SPDX-License-Identifier: Apache-2.0
#include "options.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace ddp {
namespace {

double parseNumber(std::string_view flag, const char* text, double low, double high) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value >= low && value <= high)) {
    throw std::invalid_argument(std::string(flag) + ": '" + text + "' is not a number in [" +
                                std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  return value;
}

int parseInt(std::string_view flag, const char* text, int low, int high) {
  const double value = parseNumber(flag, text, low, high);
  if (value != static_cast<int>(value)) {
    throw std::invalid_argument(std::string(flag) + ": '" + text + "' is not an integer");
  }
  return static_cast<int>(value);
}

std::vector<int> parseWidths(const char* text) {
  std::vector<int> widths;
  std::string_view rest(text);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    widths.push_back(parseInt("--hidden", item.c_str(), 1, 1 << 16));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (widths.empty()) throw std::invalid_argument("--hidden: give at least one width, e.g. 1024,1024");
  return widths;
}

template <typename Enum, size_t N>
Enum parseChoice(std::string_view flag, std::string_view text, const std::pair<const char*, Enum> (&choices)[N]) {
  std::string known;
  for (const auto& [label, value] : choices) {
    if (text == label) return value;
    known += (known.empty() ? "" : "|") + std::string(label);
  }
  throw std::invalid_argument(std::string(flag) + ": '" + std::string(text) + "' is not one of " + known);
}

constexpr std::pair<const char*, Strategy> kStrategies[] = {{"ddp", Strategy::kDdp}, {"zero", Strategy::kZero}};
constexpr std::pair<const char*, Precision> kPrecisions[] = {{"fp32", Precision::kFp32}, {"bf16", Precision::kBf16}};
constexpr std::pair<const char*, OptimizerKind> kOptimizers[] = {{"adamw", OptimizerKind::kAdamW},
                                                                 {"sgd", OptimizerKind::kSgd}};
constexpr std::pair<const char*, bool> kOnOff[] = {{"on", true}, {"off", false}};

}  // namespace

const char* usage() {
  return "ddp_trainer: data-parallel training of an MLP on the 8x8 digits over Loom\n"
         "  run under a launcher: loomrun -n 4 ddp_trainer [flags]\n"
         "  --steps N           optimizer steps (default: 10 epochs)\n"
         "  --seed S            seed of the data split, order and initial weights (default 1)\n"
         "  --strategy ddp|zero ddp: all-reduce gradients; zero: reduce-scatter them, each rank\n"
         "                      updates its shard of weights + optimizer state, then all-gather\n"
         "  --precision fp32|bf16  bf16: bf16 compute weights and gradients on the wire,\n"
         "                      fp32 master weights and optimizer state\n"
         "  --bucket-mb X       gradient bucket cap in MiB (default 1)\n"
         "  --accum K           micro-batches per step; communicate on the last only (default 1)\n"
         "  --batch B           global batch: samples per step over all ranks (default 64)\n"
         "  --hidden W,W,...    hidden layer widths (default 1024,1024: 1.1 M parameters)\n"
         "  --optimizer adamw|sgd  (default adamw)   --lr X   --momentum X   --weight-decay X\n"
         "  --overlap on|off    all-reduce each bucket during backward (default on) or after it\n"
         "  --check-identical   after every step, check all ranks hold bitwise equal weights\n"
         "  --save PATH         write a checkpoint at the end (zero: one file per rank)\n"
         "  --resume PATH       continue from a checkpoint (same flags, same trajectory)\n"
         "  --json FILE         write the summary as JSON (rank 0)\n"
         "  --data PATH         digits.csv.gz (default: python3-sklearn's copy)\n";
}

const char* name(Strategy strategy) { return strategy == Strategy::kDdp ? "ddp" : "zero"; }
const char* name(Precision precision) { return precision == Precision::kFp32 ? "fp32" : "bf16"; }
const char* name(OptimizerKind optimizer) { return optimizer == OptimizerKind::kAdamW ? "adamw" : "sgd"; }

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::fputs(usage(), stdout);
      std::exit(0);
    }
    if (flag == "--check-identical") {
      options.checkIdentical = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + " needs a value (see -h)");
    const char* value = argv[++i];
    if (flag == "--steps") options.steps = parseInt(flag, value, 1, 1 << 30);
    else if (flag == "--seed") options.seed = static_cast<uint64_t>(parseNumber(flag, value, 0, 1e15));
    else if (flag == "--strategy") options.strategy = parseChoice(flag, value, kStrategies);
    else if (flag == "--precision") options.precision = parseChoice(flag, value, kPrecisions);
    else if (flag == "--bucket-mb") options.bucketMb = parseNumber(flag, value, 1e-6, 1 << 20);
    else if (flag == "--accum") options.accumulation = parseInt(flag, value, 1, 1 << 16);
    else if (flag == "--batch") options.globalBatch = parseInt(flag, value, 1, 1 << 20);
    else if (flag == "--hidden") options.hidden = parseWidths(value);
    else if (flag == "--optimizer") options.optimizer = parseChoice(flag, value, kOptimizers);
    else if (flag == "--lr") options.learningRate = parseNumber(flag, value, 1e-12, 100);
    else if (flag == "--momentum") options.momentum = parseNumber(flag, value, 0, 1);
    else if (flag == "--weight-decay") options.weightDecay = parseNumber(flag, value, 0, 10);
    else if (flag == "--overlap") options.overlap = parseChoice(flag, value, kOnOff);
    else if (flag == "--save") options.savePath = value;
    else if (flag == "--resume") options.resumePath = value;
    else if (flag == "--json") options.jsonPath = value;
    else if (flag == "--data") options.dataPath = value;
    else throw std::invalid_argument("unknown flag " + std::string(flag) + " (see -h)");
  }
  if (options.learningRate == 0) options.learningRate = options.optimizer == OptimizerKind::kAdamW ? 1e-3 : 0.05;
  return options;
}

}  // namespace ddp
