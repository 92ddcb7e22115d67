// SPDX-License-Identifier: Apache-2.0
// The one main of the test programs that hold several test files (tests/meson.build). Each
// file's tests stay one `meson test` entry, in a process of their own:
//
//   test_unit --test-file=test_schedules.cc [gtest flags...]
//
// runs only the tests that file defines (gtest records each test's file), and exits 1 if it
// defines none, so a renamed file cannot pass by running nothing. The file selection and the
// ordinary filters combine: a test runs only when it is in the file and passes every filter
// given, --gtest_filter and GTEST_FILTER alike. GoogleTest alone would let a --gtest_filter
// argument replace GTEST_FILTER, which CI uses to leave some tests to another stage.
//
// Without --test-file the program is an ordinary GoogleTest program (every file's tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::string_view kFileFlag = "--test-file=";

struct Filter {
  std::vector<std::string> positive;  // empty: every test
  std::vector<std::string> negative;
};

std::vector<std::string> splitPatterns(const std::string& text) {
  std::vector<std::string> patterns;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(':', begin), text.size());
    if (end > begin) patterns.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return patterns;
}

// GoogleTest's syntax: "POSITIVE[-NEGATIVE]", patterns separated by ':'.
Filter parseFilter(const std::string& text) {
  Filter filter;
  const size_t dash = text.find('-');
  filter.positive = splitPatterns(text.substr(0, dash));
  if (dash != std::string::npos) filter.negative = splitPatterns(text.substr(dash + 1));
  if (filter.positive.size() == 1 && filter.positive[0] == "*") filter.positive.clear();
  return filter;
}

// GoogleTest's wildcards: '*' any run of characters, '?' one character.
bool globMatches(const char* pattern, const char* name) {
  if (*pattern == '\0') return *name == '\0';
  if (*pattern == '*') return globMatches(pattern + 1, name) || (*name != '\0' && globMatches(pattern, name + 1));
  return *name != '\0' && (*pattern == '?' || *pattern == *name) && globMatches(pattern + 1, name + 1);
}

bool anyMatches(const std::vector<std::string>& patterns, const std::string& name) {
  for (const std::string& pattern : patterns)
    if (globMatches(pattern.c_str(), name.c_str())) return true;
  return false;
}

bool passes(const Filter& filter, const std::string& name) {
  return (filter.positive.empty() || anyMatches(filter.positive, name)) && !anyMatches(filter.negative, name);
}

bool definedIn(const testing::TestInfo& test, const std::set<std::string>& files) {
  const std::string_view path = test.file();
  for (const std::string& file : files) {
    if (path == file) return true;
    if (path.size() > file.size() && path.ends_with(file) && path[path.size() - file.size() - 1] == '/') return true;
  }
  return false;
}

// Every registered test's full name ("Suite.Test"), suite by suite.
template <typename Visit>
void forEachTest(Visit visit) {
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const testing::TestInfo& test = *suite.GetTestInfo(t);
      visit(suite, test, std::string(suite.name()) + "." + test.name());
    }
  }
}

// A filter naming exactly `chosen`: "Suite.*" for a suite chosen whole, else its tests by name.
std::string filterNaming(const std::set<std::string>& chosen) {
  std::string filter;
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const testing::TestSuite& suite = *unit.GetTestSuite(s);
    std::string names;
    int count = 0;
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const std::string name = std::string(suite.name()) + "." + suite.GetTestInfo(t)->name();
      if (chosen.count(name) == 0) continue;
      names += name + ":";
      ++count;
    }
    filter += count == suite.total_test_count() ? std::string(suite.name()) + ".*:" : names;
  }
  if (filter.empty()) return "-*";  // nothing
  filter.pop_back();
  return filter;
}

}  // namespace

int main(int argc, char** argv) {
  // Our flag out of argv before GoogleTest sees it (a death test's child then runs with the
  // filter GoogleTest gives it, which names one test).
  std::set<std::string> files;
  bool filterArgument = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with(kFileFlag)) {
      files.insert(std::string(arg.substr(kFileFlag.size())));
      continue;
    }
    if (arg.starts_with("--gtest_filter=") || arg.starts_with("--gtest-filter=")) filterArgument = true;
    argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  testing::InitGoogleTest(&argc, argv);

  std::vector<Filter> filters = {parseFilter(GTEST_FLAG_GET(filter))};
  const char* variable = std::getenv("GTEST_FILTER");
  if (filterArgument && variable != nullptr) filters.push_back(parseFilter(variable));
  if (files.empty() && filters.size() == 1) return RUN_ALL_TESTS();

  std::set<std::string> chosen;
  size_t inFiles = 0;
  forEachTest([&](const testing::TestSuite&, const testing::TestInfo& test, const std::string& name) {
    if (!files.empty() && !definedIn(test, files)) return;
    ++inFiles;
    for (const Filter& filter : filters)
      if (!passes(filter, name)) return;
    chosen.insert(name);
  });
  if (!files.empty() && inFiles == 0) {
    std::string names;
    for (const std::string& file : files) names += " " + file;
    std::fprintf(stderr, "%s: no test is defined in%s (--test-file names a source file of this program)\n",
                 argv[0], names.c_str());
    return 1;
  }
  GTEST_FLAG_SET(filter, filterNaming(chosen));
  return RUN_ALL_TESTS();
}
