// SPDX-License-Identifier: Apache-2.0
// The ddp_trainer's pieces that need no communicator: the model's backward against finite
// differences, the kernels against a plain double-precision product, the bucket layout, bf16
// rounding, the optimizers' first steps and the checkpoint file format.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "examples/ddp_trainer/bf16.h"
#include "examples/ddp_trainer/checkpoint.h"
#include "examples/ddp_trainer/dense_kernels.h"
#include "examples/ddp_trainer/mlp.h"
#include "examples/ddp_trainer/optimizer_shard.h"
#include "examples/ddp_trainer/parameter_layout.h"
#include "examples/ddp_trainer/random.h"

namespace ddp {
namespace {

std::vector<float> randomVector(size_t count, uint64_t seed, double scale = 1.0) {
  Random random(seed);
  std::vector<float> values(count);
  for (auto& value : values) value = static_cast<float>((2 * random.uniform() - 1) * scale);
  return values;
}

TEST(DenseKernels, MatchDoubleProductsOnOddSizes) {
  for (int batch : {1, 3, 4, 7, 9}) {
    const int in = 13, out = 6;
    const auto x = randomVector(static_cast<size_t>(batch) * in, 1), w = randomVector(out * in, 2);
    const auto bias = randomVector(out, 3), dz = randomVector(static_cast<size_t>(batch) * out, 4);
    std::vector<float> y(static_cast<size_t>(batch) * out), dw(out * in, 0.5f), db(out, 0.25f),
        dx(static_cast<size_t>(batch) * in, 99.0f);
    linearForward(x.data(), batch, in, w.data(), bias.data(), out, y.data());
    linearWeightGrad(dz.data(), batch, out, x.data(), in, dw.data(), db.data());
    linearInputGrad(dz.data(), batch, out, w.data(), in, dx.data());
    for (int b = 0; b < batch; ++b) {
      for (int o = 0; o < out; ++o) {
        double sum = bias[o];
        for (int i = 0; i < in; ++i) sum += static_cast<double>(x[b * in + i]) * w[o * in + i];
        EXPECT_NEAR(y[b * out + o], sum, 1e-5) << "batch " << batch << " y[" << b << "][" << o << "]";
      }
      for (int i = 0; i < in; ++i) {
        double sum = 0;
        for (int o = 0; o < out; ++o) sum += static_cast<double>(dz[b * out + o]) * w[o * in + i];
        EXPECT_NEAR(dx[b * in + i], sum, 1e-5) << "dx overwritten, not accumulated";
      }
    }
    for (int o = 0; o < out; ++o) {
      double bsum = 0.25;
      for (int b = 0; b < batch; ++b) bsum += dz[b * out + o];
      EXPECT_NEAR(db[o], bsum, 1e-5);
      for (int i = 0; i < in; ++i) {
        double sum = 0.5;  // accumulates onto what was there
        for (int b = 0; b < batch; ++b) sum += static_cast<double>(dz[b * out + o]) * x[b * in + i];
        EXPECT_NEAR(dw[o * in + i], sum, 1e-5);
      }
    }
  }
}

TEST(DenseKernels, ASampleGetsTheSameBitsWhereverItSitsInTheBatch) {
  const int in = 37, out = 5;
  const auto x = randomVector(7 * in, 5), w = randomVector(out * in, 6), bias = randomVector(out, 7);
  std::vector<float> all(7 * out), one(out);
  linearForward(x.data(), 7, in, w.data(), bias.data(), out, all.data());  // rows 0-3 blocked, 4-6 single
  for (int b = 0; b < 7; ++b) {
    linearForward(x.data() + b * in, 1, in, w.data(), bias.data(), out, one.data());
    for (int o = 0; o < out; ++o) EXPECT_EQ(all[b * out + o], one[o]) << "sample " << b;
  }
}

TEST(Mlp, BackwardMatchesFiniteDifferences) {
  const std::vector<int> widths = {6, 9, 7, 4};
  ParameterLayout layout(Mlp::layerSizes(widths), 64, 3);
  Mlp model(widths, layout);
  std::vector<float> params(layout.total());
  model.initialize(params.data(), 11);
  for (const Tensor& tensor : layout.tensors()) {  // non-zero biases too
    if (tensor.name.ends_with(".bias")) {
      for (size_t i = 0; i < tensor.count; ++i) params[tensor.offset + i] = 0.1f * static_cast<float>(i % 3) - 0.1f;
    }
  }
  const int batch = 5;
  const auto x = randomVector(batch * 6, 12);
  const std::vector<int> labels = {0, 3, 1, 2, 3};
  const float scale = 1.0f / batch;
  std::vector<float> grads(layout.total(), 0.0f);
  model.forward(params.data(), x.data(), labels.data(), batch);
  std::vector<int> order;
  model.backward(params.data(), scale, grads.data(), [&](int layer) { order.push_back(layer); });
  EXPECT_EQ(order, (std::vector<int>{2, 1, 0})) << "layers complete last first, each once";
  auto loss = [&](std::vector<float>& p) { return model.forward(p.data(), x.data(), labels.data(), batch).lossSum * scale; };
  int checked = 0;
  for (const Tensor& tensor : layout.tensors()) {
    for (size_t i = 0; i < tensor.count; i += 3) {
      const size_t at = tensor.offset + i;
      std::vector<float> p = params;
      const float h = 1e-2f;
      p[at] = params[at] + h;
      const double up = loss(p);
      p[at] = params[at] - h;
      const double down = loss(p);
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(grads[at], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << tensor.name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
  for (size_t i = 0; i < layout.total(); ++i) {
    bool inTensor = false;
    for (const Tensor& tensor : layout.tensors()) inTensor |= i >= tensor.offset && i < tensor.offset + tensor.count;
    if (!inTensor) {
      EXPECT_EQ(grads[i], 0.0f) << "padding element " << i << " must stay zero";
    }
  }
}

TEST(ParameterLayout, BucketsFollowBackwardOrderAndPadToTheRankCount) {
  // Layers: 64x100 (+100), 100x100 (+100), 100x10 (+10); cap 12000 floats.
  const std::vector<int> widths = {64, 100, 100, 10};
  ParameterLayout layout(Mlp::layerSizes(widths), 12000 * sizeof(float), 3);
  ASSERT_EQ(layout.tensors().size(), 6u);
  EXPECT_EQ(layout.tensors()[0].name, "layer2.weight");
  EXPECT_EQ(layout.tensors()[5].name, "layer0.bias");
  EXPECT_EQ(layout.parameterCount(), 6400u + 100 + 10000 + 100 + 1000 + 10);
  size_t covered = 0;
  for (const Bucket& bucket : layout.buckets()) {
    EXPECT_EQ(bucket.offset, covered) << "buckets are contiguous";
    EXPECT_EQ(bucket.count % 3, 0u) << "padded to a multiple of the rank count";
    covered += bucket.count;
  }
  EXPECT_EQ(covered, layout.total());
  // 1010 (layer 2) + 10100 (layer 1) fit the cap; layer 0 (6500) opens a second bucket.
  ASSERT_EQ(layout.buckets().size(), 2u);
  EXPECT_EQ(layout.buckets()[0].lastLayer, 1);
  EXPECT_EQ(layout.buckets()[1].lastLayer, 0);
  size_t owned = 0;
  for (int rank = 0; rank < 3; ++rank) {
    for (const auto& range : layout.shardRanges(rank)) owned += range.count;
  }
  EXPECT_EQ(owned, layout.total()) << "the shards of all ranks cover every element once";
  // A tensor larger than the cap gets a bucket of its own.
  ParameterLayout tiny(Mlp::layerSizes(widths), 400 * sizeof(float), 1);
  EXPECT_EQ(tiny.buckets().size(), 6u);
}

TEST(Bf16, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(roundToBf16(1.0f), 1.0f);
  EXPECT_EQ(roundToBf16(3.0f), 3.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
  EXPECT_EQ(roundToBf16(1.0f + 0x1.0p-8f), 1.0f);
  EXPECT_EQ(roundToBf16(1.0f + 0x1.8p-8f), 1.0f + 0x1.0p-7f);
  EXPECT_TRUE(std::isnan(roundToBf16(std::nanf(""))));
  EXPECT_EQ(roundToBf16(INFINITY), INFINITY);
  EXPECT_EQ(toBf16(-2.0f), 0xc000);
}

Options optionsFor(OptimizerKind kind) {
  Options options;
  options.optimizer = kind;
  options.learningRate = 0.1;
  options.weightDecay = 0;
  return options;
}

TEST(OptimizerShard, FirstAdamWStepMovesEachWeightByTheLearningRate) {
  OptimizerShard shard(optionsFor(OptimizerKind::kAdamW), {{2, 3}});
  std::vector<float> params = {9, 9, 1, 2, 3, 9}, grads = {0, 0, 0.5f, -4, 1e-3f, 0};
  shard.loadMaster(params.data());
  shard.step(grads.data());
  shard.storeParams(params.data());
  EXPECT_NEAR(params[2], 1 - 0.1, 1e-5);
  EXPECT_NEAR(params[3], 2 + 0.1, 1e-5);
  EXPECT_NEAR(params[4], 3 - 0.1, 1e-4);
  EXPECT_EQ(params[0], 9) << "elements outside the owned range are not touched";
  EXPECT_EQ(params[5], 9);
}

TEST(OptimizerShard, SgdMomentumAccumulates) {
  OptimizerShard shard(optionsFor(OptimizerKind::kSgd), {{0, 1}});
  std::vector<float> params = {1}, grads = {1};
  shard.loadMaster(params.data());
  shard.step(grads.data());  // v = 1, p = 0.9
  shard.step(grads.data());  // v = 1.9, p = 0.71
  shard.storeParams(params.data());
  EXPECT_NEAR(params[0], 0.71, 1e-6);
}

TEST(Checkpoint, RoundTripsAndRefusesDamage) {
  const std::vector<int> widths = {4, 5, 3};
  ParameterLayout layout(Mlp::layerSizes(widths), 1 << 20, 1);
  Options options = optionsFor(OptimizerKind::kAdamW);
  OptimizerShard saved(options, {{0, layout.total()}});
  const auto params = randomVector(layout.total(), 21), grads = randomVector(layout.total(), 22);
  saved.loadMaster(params.data());
  saved.step(grads.data());
  const std::string path = std::filesystem::temp_directory_path() / ("ddp-ckpt-" + std::to_string(::getpid()));
  CheckpointContext context{options, widths, layout, 0, 1};
  saveCheckpoint(context, path, 17, saved);
  OptimizerShard loaded(options, {{0, layout.total()}});
  EXPECT_EQ(loadCheckpoint(context, path, loaded), 17);
  EXPECT_EQ(loaded.steps(), 1);
  EXPECT_EQ(loaded.master(), saved.master());
  EXPECT_EQ(loaded.secondMoment(), saved.secondMoment());
  // Another model is refused, naming the flag.
  const std::vector<int> other = {4, 6, 3};
  ParameterLayout otherLayout(Mlp::layerSizes(other), 1 << 20, 1);
  OptimizerShard otherShard(options, {{0, otherLayout.total()}});
  try {
    loadCheckpoint(CheckpointContext{options, other, otherLayout, 0, 1}, path, otherShard);
    ADD_FAILURE() << "a checkpoint of another model loaded";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("model size"), std::string::npos) << error.what();
  }
  // A truncated file is refused.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 4);
  EXPECT_THROW(loadCheckpoint(context, path, loaded), std::runtime_error);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ddp
