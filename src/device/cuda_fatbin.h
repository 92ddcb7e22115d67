// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels (cuda_kernels.cu) as nvcc compiled them: a fatbin with code for sm_80,
// sm_90 and sm_100 and PTX for newer GPUs, embedded in libloom by embed_fatbin.py (a source
// file generated at build time). A build without nvcc has no fatbin, and its CUDA runtime says
// so instead of loading (LOOM_HAVE_CUDA, from meson's add_languages('cuda')).
#pragma once

#include <cstddef>

#include "loom_config.h"

namespace loom::device::cuda {

#if LOOM_HAVE_CUDA
inline constexpr bool kHaveFatbin = true;
extern const unsigned char kFatbin[];
extern const size_t kFatbinBytes;
#else
inline constexpr bool kHaveFatbin = false;
#endif

}  // namespace loom::device::cuda
