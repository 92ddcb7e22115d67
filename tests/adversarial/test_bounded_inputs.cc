// SPDX-License-Identifier: Apache-2.0
// Issue 14, finding 10: LOOM_TOPO_FILE and LOOM_GRAPH_FILE must name regular files under the
// size limit. A device (/dev/zero, /dev/urandom), a FIFO, a directory or an oversized file is a
// clear error naming the file, at once; a malformed file names the file and the line.
//
// Each case runs in a forked child under a guard: killed after kBoundedGuardSeconds, and (outside
// AddressSanitizer, whose shadow memory needs the address space) limited to kGuardBytes of
// address space, so that a reader that slurps an endless device fails the test quickly
// instead of eating the machine.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <loom.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "base/error.h"
#include "tests/support/multiprocess.h"
#include "topology/graph_xml.h"
#include "topology/topo_xml.h"
#include "topology/xml_document.h"

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_TEST_ASAN 1
#endif
#endif

namespace loom::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBoundedGuardSeconds = 10;
constexpr rlim_t kGuardBytes = rlim_t{3} << 30;
constexpr double kBoundedPromptSeconds = 1.0;

void limitAddressSpace() {
#ifndef LOOM_TEST_ASAN
  rlimit limit{kGuardBytes, kGuardBytes};
  LOOM_REQUIRE(setrlimit(RLIMIT_AS, &limit) == 0, "setrlimit(RLIMIT_AS)");
#endif
}

// Runs `body` in a guarded child; the child fails if `body` does not throw a loom::Error with
// `code` whose message holds every fragment, within kBoundedPromptSeconds.
void expectPromptError(const std::function<void()>& body, loomResult_t code,
                       const std::vector<std::string>& fragments) {
  auto outcomes = runProcesses(1, [&](int) {
    limitAddressSpace();
    const auto start = Clock::now();
    try {
      body();
    } catch (const Error& error) {
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const std::string message = error.what();
      LOOM_REQUIRE(error.code() == code, "code " + std::to_string(error.code()) + ": " + message);
      for (const std::string& fragment : fragments) {
        LOOM_REQUIRE(message.find(fragment) != std::string::npos, "lacks '" + fragment + "': " + message);
      }
      LOOM_REQUIRE(seconds < kBoundedPromptSeconds, "took " + std::to_string(seconds) + " s: " + message);
      return;
    }
    LOOM_REQUIRE(false, "no error");
  }, kBoundedGuardSeconds);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].describe();
}

// A fresh directory for the files of one test, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "loom-bounded-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

auto readTopo(const std::string& path) {
  return [path] { topology::readTopologyFile(path); };
}
auto readGraphs(const std::string& path) {
  return [path] { topology::readGraphFile(path); };
}

TEST(BoundedInputs, TopologyFileThatIsACharacterDeviceIsRefused) {
  expectPromptError(readTopo("/dev/zero"), loomInvalidArgument, {"/dev/zero", "not a regular file"});
}

TEST(BoundedInputs, GraphFileThatIsACharacterDeviceIsRefused) {
  expectPromptError(readGraphs("/dev/urandom"), loomInvalidArgument, {"/dev/urandom", "not a regular file"});
}

TEST(BoundedInputs, FifoIsRefusedWithoutWaitingForAWriter) {
  TempDir dir;
  const std::string fifo = dir.file("topo.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expectPromptError(readTopo(fifo), loomInvalidArgument, {fifo, "not a regular file"});
  expectPromptError(readGraphs(fifo), loomInvalidArgument, {fifo, "not a regular file"});
}

TEST(BoundedInputs, DirectoryIsRefused) {
  TempDir dir;
  expectPromptError(readTopo(dir.path()), loomInvalidArgument, {dir.path(), "not a regular file"});
  expectPromptError(readGraphs(dir.path()), loomInvalidArgument, {dir.path(), "not a regular file"});
}

TEST(BoundedInputs, FileOverTheSizeLimitIsRefusedBeforeItIsRead) {
  TempDir dir;
  const std::string big = dir.file("big.xml");
  {
    // Sparse: the limit must be enforced from the file's size, not by reading it.
    const int fd = ::open(big.c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, off_t(topology::kMaxXmlBytes) + 1), 0);
    ::close(fd);
  }
  const std::string size = std::to_string(topology::kMaxXmlBytes + 1);
  const std::string limit = std::to_string(topology::kMaxXmlBytes);
  expectPromptError(readTopo(big), loomInvalidArgument, {big, size + " bytes", "limit of " + limit});
  expectPromptError(readGraphs(big), loomInvalidArgument, {big, size + " bytes", "limit of " + limit});
}

TEST(BoundedInputs, MissingFileNamesTheFile) {
  TempDir dir;
  const std::string missing = dir.file("missing.xml");
  expectPromptError(readTopo(missing), loomSystemError, {missing, "No such file"});
  expectPromptError(readGraphs(missing), loomSystemError, {missing, "No such file"});
}

TEST(BoundedInputs, SyntaxErrorNamesTheFileAndLine) {
  TempDir dir;
  const std::string topo = dir.file("broken.xml");
  writeText(topo, "<system version=\"1\">\n  <cpu numaid=\"0\">\n  </cpu>\n  <pci busid=\"0000:01:00.0\"\n</system>\n");
  expectPromptError(readTopo(topo), loomInvalidArgument, {topo + ":5:"});
  const std::string graph = dir.file("broken.graph.xml");
  writeText(graph, "<graphs version=\"1\">\n\n  <graph id=\"0\" pattern=\"4\">\n  </graphs>\n");
  expectPromptError(readGraphs(graph), loomInvalidArgument, {graph + ":4:"});
}

// End to end: a communicator's init with the variable pointing at a device fails at once, the
// error naming the variable and the file.
void expectInitRefuses(const char* variable, const char* path) {
  auto outcomes = runProcesses(1, [&](int) {
    limitAddressSpace();
    setenv(variable, path, 1);
    loomUniqueId id;
    LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
    loomComm_t comm = nullptr;
    const auto start = Clock::now();
    const loomResult_t result = loomCommInitRank(&comm, 1, id, 0);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const std::string message = loomGetLastError(nullptr);
    LOOM_REQUIRE(result == loomInvalidArgument, std::to_string(result) + ": " + message);
    LOOM_REQUIRE(message.find(variable) != std::string::npos, message);
    LOOM_REQUIRE(message.find(path) != std::string::npos, message);
    LOOM_REQUIRE(message.find("not a regular file") != std::string::npos, message);
    LOOM_REQUIRE(seconds < 2.0, "took " + std::to_string(seconds) + " s");
  }, kBoundedGuardSeconds);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].describe();
}

TEST(BoundedInputs, InitWithTopoFileDevZeroFailsAtOnce) { expectInitRefuses("LOOM_TOPO_FILE", "/dev/zero"); }

TEST(BoundedInputs, InitWithGraphFileDevUrandomFailsAtOnce) {
  expectInitRefuses("LOOM_GRAPH_FILE", "/dev/urandom");
}

}  // namespace
}  // namespace loom::test
