// SPDX-License-Identifier: Apache-2.0
#include "dense_kernels.h"

#include <cstring>

// An AVX2 clone is picked at load time where the CPU has it. No FMA: a fused multiply-add
// rounds differently, and the arithmetic must not depend on which clone runs.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DDP_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DDP_VECTOR_CLONES
#endif

// The vector helpers below are always inlined into the kernels, never called across an ABI
// boundary, so GCC's note that 32-byte vectors pass differently with and without AVX is moot.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ddp {
namespace {

constexpr int kLanes = 8;  // independent partial sums of a dot product (a vector's worth)
// GCC's vector extension: one register of AVX2, two of SSE2; lanes stay independent either way.
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

[[gnu::always_inline]] inline Lanes load(const float* from) {
  Lanes value;
  std::memcpy(&value, from, sizeof value);  // unaligned load
  return value;
}

// Sums the partials in a fixed tree, then the tail in order.
[[gnu::always_inline]] inline float finishDot(const Lanes& partial, const float* x, const float* w, int from, int to) {
  float sum = ((partial[0] + partial[4]) + (partial[1] + partial[5])) +
              ((partial[2] + partial[6]) + (partial[3] + partial[7]));
  for (int i = from; i < to; ++i) sum += x[i] * w[i];
  return sum;
}

}  // namespace

DDP_VECTOR_CLONES
void linearForward(const float* x, int batch, int in, const float* w, const float* bias, int out, float* y) {
  const int body = in - in % kLanes;
  for (int o = 0; o < out; ++o) {
    const float* row = w + static_cast<long>(o) * in;
    int b = 0;
    // Four samples share each load of the weight row; each keeps its own partial sums, so the
    // result is the same as the one-sample loop below.
    for (; b + 4 <= batch; b += 4) {
      const float* x0 = x + static_cast<long>(b) * in;
      const float* x1 = x0 + in;
      const float* x2 = x1 + in;
      const float* x3 = x2 + in;
      Lanes p0 = {}, p1 = {}, p2 = {}, p3 = {};
      for (int i = 0; i < body; i += kLanes) {
        const Lanes weight = load(row + i);
        p0 += load(x0 + i) * weight;
        p1 += load(x1 + i) * weight;
        p2 += load(x2 + i) * weight;
        p3 += load(x3 + i) * weight;
      }
      y[static_cast<long>(b) * out + o] = bias[o] + finishDot(p0, x0, row, body, in);
      y[static_cast<long>(b + 1) * out + o] = bias[o] + finishDot(p1, x1, row, body, in);
      y[static_cast<long>(b + 2) * out + o] = bias[o] + finishDot(p2, x2, row, body, in);
      y[static_cast<long>(b + 3) * out + o] = bias[o] + finishDot(p3, x3, row, body, in);
    }
    for (; b < batch; ++b) {
      const float* xb = x + static_cast<long>(b) * in;
      Lanes p = {};
      for (int i = 0; i < body; i += kLanes) p += load(xb + i) * load(row + i);
      y[static_cast<long>(b) * out + o] = bias[o] + finishDot(p, xb, row, body, in);
    }
  }
}

DDP_VECTOR_CLONES
void linearWeightGrad(const float* dz, int batch, int out, const float* x, int in, float* dw, float* db) {
  for (int o = 0; o < out; ++o) {
    float* row = dw + static_cast<long>(o) * in;
    int b = 0;
    // ((((row + t0) + t1) + t2) + t3): the same additions, in the same order, as four passes
    // of the one-sample loop, with one load and store of the row instead of four.
    for (; b + 4 <= batch; b += 4) {
      const float g0 = dz[static_cast<long>(b) * out + o], g1 = dz[static_cast<long>(b + 1) * out + o];
      const float g2 = dz[static_cast<long>(b + 2) * out + o], g3 = dz[static_cast<long>(b + 3) * out + o];
      const float* x0 = x + static_cast<long>(b) * in;
      const float* x1 = x0 + in;
      const float* x2 = x1 + in;
      const float* x3 = x2 + in;
      for (int i = 0; i < in; ++i) row[i] = row[i] + g0 * x0[i] + g1 * x1[i] + g2 * x2[i] + g3 * x3[i];
      db[o] = db[o] + g0 + g1 + g2 + g3;
    }
    for (; b < batch; ++b) {
      const float g = dz[static_cast<long>(b) * out + o];
      const float* xb = x + static_cast<long>(b) * in;
      for (int i = 0; i < in; ++i) row[i] = row[i] + g * xb[i];
      db[o] = db[o] + g;
    }
  }
}

DDP_VECTOR_CLONES
void linearInputGrad(const float* dz, int batch, int out, const float* w, int in, float* dx) {
  std::memset(dx, 0, sizeof(float) * static_cast<size_t>(batch) * in);
  // Four weight rows at a time stay in L1 while every sample's dx row passes over them; the
  // additions per element are in increasing o, as in the one-row loop.
  int o = 0;
  for (; o + 4 <= out; o += 4) {
    const float* w0 = w + static_cast<long>(o) * in;
    const float* w1 = w0 + in;
    const float* w2 = w1 + in;
    const float* w3 = w2 + in;
    for (int b = 0; b < batch; ++b) {
      const float* g = dz + static_cast<long>(b) * out + o;
      float* row = dx + static_cast<long>(b) * in;
      for (int i = 0; i < in; ++i) row[i] = row[i] + g[0] * w0[i] + g[1] * w1[i] + g[2] * w2[i] + g[3] * w3[i];
    }
  }
  for (; o < out; ++o) {
    const float* wo = w + static_cast<long>(o) * in;
    for (int b = 0; b < batch; ++b) {
      const float g = dz[static_cast<long>(b) * out + o];
      float* row = dx + static_cast<long>(b) * in;
      for (int i = 0; i < in; ++i) row[i] = row[i] + g * wo[i];
    }
  }
}

}  // namespace ddp
