// SPDX-License-Identifier: Apache-2.0
// The host kernels' instruction sets this machine can run, for tests that check each of them.
#pragma once

#include <vector>

#include "kernels/host/host_reduce_isa.h"

namespace loom::test {

inline std::vector<kernels::HostIsa> availableHostIsas() {
  std::vector<kernels::HostIsa> isas;
  for (kernels::HostIsa isa : {kernels::HostIsa::Generic, kernels::HostIsa::Avx2, kernels::HostIsa::Avx512}) {
    if (kernels::hostIsaAvailable(isa)) isas.push_back(isa);
  }
  return isas;
}

}  // namespace loom::test
