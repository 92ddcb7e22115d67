// SPDX-License-Identifier: Apache-2.0
// The 8x8 handwritten digits (1797 images, 64 pixels of 0..16, 10 classes) that Debian's
// python3-sklearn ships as sklearn/datasets/data/digits.csv.gz, read by the trainer itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddp {

struct Dataset {
  static constexpr int kFeatures = 64;
  static constexpr int kClasses = 10;
  std::vector<float> features;  // size() * kFeatures, pixels scaled to [0, 1]
  std::vector<int> labels;
  int size() const { return static_cast<int>(labels.size()); }
  const float* row(int i) const { return features.data() + static_cast<size_t>(i) * kFeatures; }
};

struct DigitsSplit {
  Dataset train, test;
  std::string path;  // the file read
};

// Reads digits.csv.gz from path, or (path empty) from python3-sklearn's install location.
// Throws std::runtime_error naming the file and the package when it is missing or malformed.
// The train/test split (test: every image whose seeded position falls in the last 20%) depends
// only on seed.
DigitsSplit loadDigits(const std::string& path, uint64_t seed);

}  // namespace ddp
