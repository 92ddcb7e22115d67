// SPDX-License-Identifier: Apache-2.0
#include "device/device_select.h"

#include <atomic>
#include <mutex>
#include <string>

#include "base/config.h"
#include "base/error.h"
#include "base/fork_guard.h"
#include "base/log.h"

namespace loom::device {
namespace {

std::atomic<DeviceRuntime*> chosen{nullptr};

DeviceRuntime& choose() {
  const std::string wanted = config::choice(config::Knob::Device);
  if (wanted == "none") return noneRuntime();
  if (wanted == "emulated") return emulatedRuntime();
  std::string why;
  if (DeviceRuntime* cuda = cudaRuntime(&why)) return *cuda;
  if (wanted == "cuda") throw Error(loomSystemError, "LOOM_DEVICE=cuda: " + why);
  LOOM_INFO(INIT, "device runtime: none (%s)", why.c_str());
  return noneRuntime();
}

}  // namespace

DeviceRuntime& processRuntime() {
  if (DeviceRuntime* runtime = chosen.load(std::memory_order_acquire)) return *runtime;
  // Guarded across fork: a child forked while another thread chooses chooses again itself.
  static std::mutex& choosing = [] () -> std::mutex& {
    static std::mutex mutex;
    guardAcrossFork(mutex);
    return mutex;
  }();
  const std::lock_guard<std::mutex> lock(choosing);
  if (DeviceRuntime* runtime = chosen.load(std::memory_order_acquire)) return *runtime;
  DeviceRuntime& runtime = choose();
  LOOM_INFO(INIT, "device runtime: %s (%d devices)", runtime.name(), runtime.deviceCount());
  detail::runtimeActive.store(runtime.available(), std::memory_order_release);
  chosen.store(&runtime, std::memory_order_release);
  return runtime;
}

namespace detail {
std::atomic<bool> runtimeActive{false};
}

}  // namespace loom::device
