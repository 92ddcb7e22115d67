// SPDX-License-Identifier: Apache-2.0
// The body both abi_facts_*.cc files share: include it where ncclConfig_t & co. are declared and
// CONFIG_INITIALIZER, SIM_INFO_INITIALIZER and COLLECT_FUNCTION_NAME are defined. It defines
// COLLECT_FUNCTION_NAME() returning abi_facts.inc's facts.
#include <cstddef>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "tests/nccl/abi_facts.h"

namespace loom::test::nccl {
namespace {

ncclConfig_t configInitializer() {
  ncclConfig_t config = CONFIG_INITIALIZER;
  return config;
}

ncclSimInfo_t simInfoInitializer() {
  ncclSimInfo_t info = SIM_INFO_INITIALIZER;
  return info;
}

template <typename T>
std::string text(const T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::to_string(static_cast<double>(value));
  } else {
    return std::to_string(static_cast<long long>(value));
  }
}

}  // namespace

std::vector<AbiFact> COLLECT_FUNCTION_NAME() {
  std::vector<AbiFact> facts;
#define FACT(label, value) facts.push_back(AbiFact{label, text(value)});
// A function's type as the compiler mangles it: return and parameter types by their names (the
// typedefs both headers give), so a parameter of another type or in another place differs.
#define FUNCTION(function)                                                    \
  facts.push_back(AbiFact{#function, typeid(decltype(&function)).name()});    \
  facts.push_back(AbiFact{"p" #function, typeid(decltype(&p##function)).name()});
#include "tests/nccl/abi_facts.inc"
#undef FACT
#undef FUNCTION
  return facts;
}

}  // namespace loom::test::nccl
