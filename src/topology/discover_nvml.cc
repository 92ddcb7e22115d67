// SPDX-License-Identifier: Apache-2.0
// NVLink discovery through NVML, loaded with dlopen so that Loom builds and runs without the
// NVIDIA driver. The few NVML entry points used are declared here with the ABI nvml.h gives
// them (nvmlPciInfo_t's layout has been stable since the v2 API).
#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>

#include "base/log.h"
#include "topology/host_inventory.h"
#include "topology/link_bandwidth.h"

namespace loom::topology {
namespace {

using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlFeatureEnabled = 1;  // nvmlEnableState_t NVML_FEATURE_ENABLED
constexpr unsigned kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper has 18)
constexpr unsigned kRemoteGpu = 0;      // nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_GPU
constexpr unsigned kRemoteIbmNpu = 1;   // ... _IBMNPU: the link goes to a POWER9 CPU

struct NvmlDeviceOpaque;
using NvmlDevice = NvmlDeviceOpaque*;

struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];  // "00000000:3B:00.0": eight-digit domain, upper-case hex
};

// The library and the functions Loom calls; shut down and unloaded on destruction.
class Nvml {
 public:
  // nullptr (after an INFO line) when the library or a required symbol is missing or NVML
  // does not initialise (driver not loaded).
  static std::unique_ptr<Nvml> open() {
    void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      LOOM_INFO(GRAPH, "NVML not available (%s): no NVLink information", dlerror());
      return nullptr;
    }
    std::unique_ptr<Nvml> nvml(new Nvml(handle));
    if (!nvml->resolve()) {
      LOOM_INFO(GRAPH, "NVML lacks the NVLink queries Loom uses: no NVLink information");
      return nullptr;
    }
    NvmlReturn status = nvml->init_();
    if (status != kNvmlSuccess) {
      LOOM_INFO(GRAPH, "nvmlInit failed (%d): no NVLink information", status);
      return nullptr;
    }
    nvml->initialized_ = true;
    return nvml;
  }

  ~Nvml() {
    if (initialized_) shutdown_();
    dlclose(handle_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  NvmlReturn (*init_)() = nullptr;
  NvmlReturn (*shutdown_)() = nullptr;
  NvmlReturn (*handleByBusId_)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*computeCapability_)(NvmlDevice, int*, int*) = nullptr;
  NvmlReturn (*linkState_)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*remotePciInfo_)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  NvmlReturn (*remoteDeviceType_)(NvmlDevice, unsigned, unsigned*) = nullptr;  // optional

 private:
  explicit Nvml(void* handle) : handle_(handle) {}

  template <typename Function>
  bool load(Function& function, const char* name) {
    function = reinterpret_cast<Function>(dlsym(handle_, name));
    return function != nullptr;
  }

  bool resolve() {
    load(remoteDeviceType_, "nvmlDeviceGetNvLinkRemoteDeviceType");  // driver r460 and newer
    return load(init_, "nvmlInit_v2") && load(shutdown_, "nvmlShutdown") &&
           load(handleByBusId_, "nvmlDeviceGetHandleByPciBusId_v2") &&
           load(computeCapability_, "nvmlDeviceGetCudaComputeCapability") &&
           load(linkState_, "nvmlDeviceGetNvLinkState") &&
           load(remotePciInfo_, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  }

  void* handle_;
  bool initialized_ = false;
};

// NVML's "00000000:3B:00.0" in the model's spelling, "0000:3b:00.0".
std::string busIdFromNvml(const std::string& nvmlBusId) {
  size_t colon = nvmlBusId.find(':');
  if (colon == std::string::npos) return "";
  unsigned long domain = std::strtoul(nvmlBusId.substr(0, colon).c_str(), nullptr, 16);
  char text[16];
  std::snprintf(text, sizeof(text), "%04lx", domain);
  std::string busId = text + nvmlBusId.substr(colon);
  for (char& c : busId) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return busId;
}

// All NVSwitches are folded into one node (see system.h): created on the first switch link.
class NvSwitchFold {
 public:
  explicit NvSwitchFold(System& system) : system_(system) {}

  int node(const std::string& switchBusId) {
    if (index_ < 0) index_ = system_.addNvSwitch(switchBusId);
    switches_.insert(switchBusId);
    system_.node(index_).nvSwitchCount = static_cast<int>(switches_.size());
    return index_;
  }

 private:
  System& system_;
  int index_ = -1;
  std::set<std::string> switches_;
};

void addLinksOfGpu(const Nvml& nvml, System& system, int gpu, NvSwitchFold& fold) {
  NvmlDevice device = nullptr;
  std::string busId = system.node(gpu).pci.busId;
  if (nvml.handleByBusId_(busId.c_str(), &device) != kNvmlSuccess) {
    LOOM_INFO(GRAPH, "NVML does not know GPU %s: no NVLink information for it", busId.c_str());
    return;
  }
  int major = 0, minor = 0;
  if (nvml.computeCapability_(device, &major, &minor) == kNvmlSuccess) {
    system.node(gpu).gpu.sm = major * 10 + minor;
  }
  const double perLink = gpuLinkBandwidth(system.node(gpu).gpu);
  for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
    int active = 0;
    if (nvml.linkState_(device, link, &active) != kNvmlSuccess || active != kNvmlFeatureEnabled) {
      continue;
    }
    NvmlPciInfo remote{};
    if (nvml.remotePciInfo_(device, link, &remote) != kNvmlSuccess) continue;
    std::string remoteBusId = busIdFromNvml(remote.busId);
    unsigned remoteType = kRemoteGpu;
    bool typeKnown =
        nvml.remoteDeviceType_ && nvml.remoteDeviceType_(device, link, &remoteType) == kNvmlSuccess;
    int peer = system.findByBusId(remoteBusId);
    if (peer >= 0 && system.node(peer).type == NodeType::Gpu) {
      // Each GPU reports its own end of every link, so one direction per call.
      system.addLink(gpu, peer, LinkType::NvLink, perLink);
    } else if (typeKnown && remoteType == kRemoteIbmNpu) {
      int cpu = system.parentCpu(gpu);
      if (cpu >= 0) system.connect(gpu, cpu, LinkType::NvLink, perLink);
    } else {
      // A switch, or a peer NVML cannot name (NVSwitches are invisible inside many VMs): NCCL
      // makes the same assumption.
      system.connect(gpu, fold.node(remoteBusId), LinkType::NvLink, perLink);
    }
  }
}

}  // namespace

void addNvmlInformation(System& system) {
  std::vector<int> nvidiaGpus;
  for (int gpu : system.nodesOfType(NodeType::Gpu)) {
    if (!system.node(gpu).gpu.amd) nvidiaGpus.push_back(gpu);
  }
  if (nvidiaGpus.empty()) return;  // nothing NVML could add: do not even load it
  std::unique_ptr<Nvml> nvml = Nvml::open();
  if (!nvml) return;
  NvSwitchFold fold(system);
  for (int gpu : nvidiaGpus) addLinksOfGpu(*nvml, system, gpu, fold);
}

}  // namespace loom::topology
