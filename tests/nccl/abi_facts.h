// SPDX-License-Identifier: Apache-2.0
// The facts of an NCCL ABI declaration that a program compiled against it depends on: struct
// sizes and field offsets, enum values, the initializers' values, and each function's type (its
// mangled C++ type name, which spells the parameter and return types). The same list
// (abi_facts.inc) is read twice: once over the CUDA toolkit's nccl.h (abi_facts_toolkit.cc, built
// only where the toolkit has one) and once over Loom's src/nccl/nccl_abi.h (abi_facts_loom.cc).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace loom::test::nccl {

struct AbiFact {
  std::string name;
  std::string value;
};

std::vector<AbiFact> loomAbiFacts();
// Only in builds that found the toolkit's nccl.h (LOOM_TEST_HAVE_NCCL_H).
std::vector<AbiFact> toolkitAbiFacts();

}  // namespace loom::test::nccl
