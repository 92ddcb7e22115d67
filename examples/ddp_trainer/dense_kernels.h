// SPDX-License-Identifier: Apache-2.0
// The three matrix products of a fully connected layer, row-major, single-threaded. Each
// output element is summed in an order fixed by this code (not by the compiler or the vector
// width), so every rank computes the same bits from the same inputs.
#pragma once

namespace ddp {

// y[b][o] = bias[o] + sum_i x[b][i] * w[o][i]      (x: batch x in, w: out x in, y: batch x out)
void linearForward(const float* x, int batch, int in, const float* w, const float* bias, int out, float* y);

// dw[o][i] += sum_b dz[b][o] * x[b][i];  db[o] += sum_b dz[b][o]      (accumulates)
void linearWeightGrad(const float* dz, int batch, int out, const float* x, int in, float* dw, float* db);

// dx[b][i] = sum_o dz[b][o] * w[o][i]      (overwrites dx: batch x in)
void linearInputGrad(const float* dz, int batch, int out, const float* w, int in, float* dx);

}  // namespace ddp
