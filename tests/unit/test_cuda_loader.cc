// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime's loader on machines without a GPU (device/cuda_driver.h): with the toolkit's
// stub libcuda.so.1 first on the library path, and with none at all, cudaRuntime() is null with a
// reason that says which, LOOM_DEVICE=cuda makes the selection fail with that reason, and
// LOOM_DEVICE=auto falls back to the "none" runtime.
//
// Each case runs in a fresh process (this program, re-executed with one DISABLED_ test): the
// dynamic loader reads LD_LIBRARY_PATH when a process starts, and a process opens the driver
// once and chooses its runtime once.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "device/device_select.h"

namespace {

// Set in the child only: which test runs there. Not a LOOM_ name: Loom warns about those it
// does not know.
constexpr const char* kChildVariable = "CUDA_LOADER_TEST_CHILD";

// What the child prints, one line each, for the parent to read.
TEST(CudaLoaderChild, DISABLED_Report) {
  if (std::getenv(kChildVariable) == nullptr) GTEST_SKIP() << "runs as a child of the other tests";
  std::string why;
  loom::DeviceRuntime* runtime = loom::device::cudaRuntime(&why);
  std::printf("cudaRuntime: %s\n", runtime != nullptr ? runtime->name() : ("null: " + why).c_str());
  try {
    std::printf("selected: %s\n", loom::device::processRuntime().name());
  } catch (const loom::Error& error) {
    std::printf("selection error %d: %s\n", static_cast<int>(error.code()), error.what());
  }
  std::fflush(stdout);
}

struct ChildReport {
  std::string runtime;    // "null: <why>" or a runtime's name
  std::string selection;  // "selected: ..." or "selection error <code>: ..."
  std::string output;     // everything, for failure messages
};

std::string lineAfter(const std::string& text, const std::string& prefix) {
  const size_t start = text.find("\n" + prefix);
  if (start == std::string::npos) return "";
  const size_t from = start + 1 + prefix.size();
  return text.substr(from, text.find('\n', from) - from);
}

// Runs the child with LD_LIBRARY_PATH=libraryPath and LOOM_DEVICE=device; the GTEST_ variables
// stay behind, so the child cannot overwrite the parent's report file.
ChildReport runChild(const std::string& libraryPath, const std::string& device) {
  int pipeFds[2];
  if (pipe(pipeFds) != 0) return ChildReport{"", "", "pipe failed"};
  const pid_t child = fork();
  if (child == 0) {
    setenv("LD_LIBRARY_PATH", libraryPath.c_str(), 1);
    setenv("LOOM_DEVICE", device.c_str(), 1);
    setenv(kChildVariable, "1", 1);
    for (const char* variable :
         {"GTEST_OUTPUT", "GTEST_FILTER", "GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS"}) {
      unsetenv(variable);
    }
    dup2(pipeFds[1], STDOUT_FILENO);
    close(pipeFds[0]);
    close(pipeFds[1]);
    execl("/proc/self/exe", "test_cuda_loader", "--gtest_also_run_disabled_tests",
          "--gtest_filter=CudaLoaderChild.DISABLED_Report", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipeFds[1]);
  std::string output = "\n";
  char buffer[4096];
  for (ssize_t got; (got = read(pipeFds[0], buffer, sizeof(buffer))) != 0;) {
    if (got < 0) break;
    output.append(buffer, static_cast<size_t>(got));
  }
  close(pipeFds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed:" << output;
  ChildReport report{lineAfter(output, "cudaRuntime: "), lineAfter(output, "selected: "), output};
  if (report.selection.empty()) {
    const std::string error = lineAfter(output, "selection error ");
    if (!error.empty()) report.selection = "error " + error;
  } else {
    report.selection = "selected " + report.selection;
  }
  return report;
}

// A temporary folder, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char path[] = "/tmp/loom-cuda-loader-XXXXXX";
    if (mkdtemp(path) != nullptr) path_ = path;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The toolkit's stub driver: $CUDA_HOME / $CUDA_PATH, else /usr/local/cuda.
std::string findStub() {
  std::vector<std::string> roots;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* value = std::getenv(variable); value != nullptr && *value != '\0')
      roots.push_back(value);
  }
  roots.push_back("/usr/local/cuda");
  for (const std::string& root : roots) {
    for (const char* relative :
         {"/lib64/stubs/libcuda.so", "/targets/x86_64-linux/lib/stubs/libcuda.so",
          "/targets/sbsa-linux/lib/stubs/libcuda.so"}) {
      struct stat info {};
      if (stat((root + relative).c_str(), &info) == 0) return root + relative;
    }
  }
  return "";
}

bool builtWithoutCuda(const ChildReport& report) {
  return report.runtime.find("built without CUDA (") != std::string::npos;
}

TEST(CudaLoader, TheToolkitsStubIsNamedAndAutoFallsBackToNone) {
  const std::string stub = findStub();
  if (stub.empty())
    GTEST_SKIP()
        << "no CUDA toolkit stub (lib64/stubs/libcuda.so) under $CUDA_HOME or /usr/local/cuda";
  const TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  ASSERT_EQ(symlink(stub.c_str(), (dir.path() + "/libcuda.so.1").c_str()), 0);

  const ChildReport report = runChild(dir.path(), "auto");
  if (builtWithoutCuda(report)) GTEST_SKIP() << report.runtime;
  EXPECT_NE(report.runtime.find("null: no CUDA driver: "), std::string::npos) << report.output;
  EXPECT_NE(report.runtime.find("is the toolkit's stub library (CUDA_ERROR_STUB_LIBRARY)"),
            std::string::npos)
      << report.output;
  EXPECT_NE(report.runtime.find(dir.path() + "/libcuda.so.1"), std::string::npos) << report.output;
  EXPECT_EQ(report.selection, "selected none") << report.output;
}

TEST(CudaLoader, TheStubMakesLoomDeviceCudaAClearError) {
  const std::string stub = findStub();
  if (stub.empty())
    GTEST_SKIP()
        << "no CUDA toolkit stub (lib64/stubs/libcuda.so) under $CUDA_HOME or /usr/local/cuda";
  const TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  ASSERT_EQ(symlink(stub.c_str(), (dir.path() + "/libcuda.so.1").c_str()), 0);

  const ChildReport report = runChild(dir.path(), "cuda");
  if (builtWithoutCuda(report)) GTEST_SKIP() << report.runtime;
  const std::string expected = "error " + std::to_string(static_cast<int>(loomSystemError)) +
                               ": LOOM_DEVICE=cuda: no CUDA driver: " + dir.path() +
                               "/libcuda.so.1 is the toolkit's stub";
  EXPECT_EQ(report.selection.rfind(expected, 0), 0u) << report.output;
}

TEST(CudaLoader, NoDriverOnThePathIsNotFound) {
  if (void* installed = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(installed);
    GTEST_SKIP() << "this machine has a libcuda.so.1 the loader finds without LD_LIBRARY_PATH";
  }
  const TempDir empty;
  ASSERT_FALSE(empty.path().empty());
  for (const char* device : {"auto", "cuda"}) {
    const ChildReport report = runChild(empty.path(), device);
    if (builtWithoutCuda(report)) GTEST_SKIP() << report.runtime;
    EXPECT_EQ(report.runtime.rfind("null: no CUDA driver: libcuda.so.1 not found (", 0), 0u)
        << report.output;
    if (std::string(device) == "auto") {
      EXPECT_EQ(report.selection, "selected none") << report.output;
    } else {
      EXPECT_EQ(
          report.selection.rfind("error " + std::to_string(static_cast<int>(loomSystemError)) +
                                     ": LOOM_DEVICE=cuda: no CUDA driver: libcuda.so.1 not found",
                                 0),
          0u)
          << report.output;
    }
  }
}

}  // namespace
