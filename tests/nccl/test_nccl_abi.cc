// SPDX-License-Identifier: Apache-2.0
// Loom's declaration of the NCCL ABI (src/nccl/nccl_abi.h) against the CUDA toolkit's nccl.h:
// every struct size and field offset, enum value, initializer value and function type of
// abi_facts.inc the same. Where the toolkit has no nccl.h the comparison cannot run: the test
// says so and skips.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/nccl/abi_facts.h"

namespace loom::test::nccl {
namespace {

TEST(NcclAbi, LoomDeclarationMatchesTheToolkitsNcclH) {
#if LOOM_TEST_HAVE_NCCL_H
  const std::vector<AbiFact> toolkit = toolkitAbiFacts();
  const std::vector<AbiFact> loom = loomAbiFacts();
  ASSERT_EQ(toolkit.size(), loom.size());
  for (size_t i = 0; i < toolkit.size(); ++i) {
    ASSERT_EQ(toolkit[i].name, loom[i].name);
    EXPECT_EQ(toolkit[i].value, loom[i].value) << toolkit[i].name << ": nccl.h says " << toolkit[i].value
                                               << ", Loom's nccl_abi.h " << loom[i].value;
  }
  std::printf("%zu facts compared\n", toolkit.size());
#else
  GTEST_SKIP() << "the CUDA toolkit's nccl.h was not found when this build was configured "
                  "(install the toolkit, or NCCL's headers, and reconfigure)";
#endif
}

// Every function nccl.h declares is in abi_facts.inc's list (so the comparison above covers it),
// and the list names nothing nccl.h lacks.
TEST(NcclAbi, EveryFunctionOfNcclHIsDeclared) {
#if LOOM_TEST_HAVE_NCCL_H
  std::ifstream header(LOOM_TEST_NCCL_H);
  ASSERT_TRUE(header) << LOOM_TEST_NCCL_H;
  std::stringstream text;
  text << header.rdbuf();
  const std::string source = text.str();
  std::set<std::string> declared;
  // A declaration: a return type (every function of nccl.h returns one of these), the name, "(".
  const std::regex function(R"((?:ncclResult_t|const\s+char\s*\*|void)\s+(nccl[A-Z][A-Za-z0-9]*)\s*\()");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), function); it != std::sregex_iterator(); ++it) {
    declared.insert((*it)[1]);
  }
  std::set<std::string> listed;
  for (const AbiFact& fact : loomAbiFacts()) {
    if (fact.value.rfind("PF", 0) == 0 && fact.name.rfind("nccl", 0) == 0) listed.insert(fact.name);
  }
  for (const std::string& name : declared) {
    EXPECT_TRUE(listed.count(name)) << name << " is declared in nccl.h but not in abi_facts.inc's list";
  }
  for (const std::string& name : listed) {
    EXPECT_TRUE(declared.count(name)) << name << " is in abi_facts.inc's list but not declared in nccl.h";
  }
  std::printf("%zu functions in %s\n", declared.size(), LOOM_TEST_NCCL_H);
#else
  GTEST_SKIP() << "the CUDA toolkit's nccl.h was not found when this build was configured";
#endif
}

TEST(NcclAbi, VersionCodeIsTheOneDeclared) {
  // The value ncclGetVersion returns: frameworks gate features on it (>= 22800).
  const std::vector<AbiFact> loom = loomAbiFacts();
  for (const AbiFact& fact : loom) {
    if (fact.name == "config initializer: version") {
      EXPECT_EQ(fact.value, "22809");
    }
  }
}

}  // namespace
}  // namespace loom::test::nccl
