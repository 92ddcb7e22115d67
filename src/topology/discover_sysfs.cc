// SPDX-License-Identifier: Apache-2.0
// Host discovery from sysfs and /proc alone: NUMA domains, PCI functions, network ports and
// the CPU's identity. Used for everything when Loom is built without hwloc, and always for what
// hwloc does not report (link speed strings, interface speeds, RDMA ports, bonds).
#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "topology/host_inventory.h"

namespace loom::topology {
namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// First line of a sysfs attribute, trimmed; nullopt when it cannot be read (absent, or the
// driver refuses the read as virtio-net does for `speed` on some kernels).
std::optional<std::string> readAttribute(const fs::path& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::string line;
  if (!std::getline(file, line)) return std::nullopt;
  return trim(line);
}

std::optional<long> readInteger(const fs::path& path) {
  auto text = readAttribute(path);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  long value = std::strtol(text->c_str(), &end, 0);
  if (end == text->c_str()) return std::nullopt;
  return value;
}

// Entry names of a directory, sorted so that discovery is deterministic; empty if unreadable.
std::vector<std::string> listDirectory(const fs::path& path) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Where a sysfs link really points; the path itself when it is not a link or cannot be
// resolved (a fake tree made of plain directories).
fs::path resolve(const fs::path& path) {
  std::error_code error;
  fs::path real = fs::canonical(path, error);
  return error ? path : real;
}

bool pathExists(const fs::path& path) {
  std::error_code error;
  return fs::exists(path, error);
}

std::string toLower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// "0-3,8-11" (the kernel's cpulist format) as a set of CPU numbers.
std::set<int> parseCpuList(const std::string& list) {
  std::set<int> cpus;
  std::stringstream stream(list);
  std::string range;
  while (std::getline(stream, range, ',')) {
    range = trim(range);
    if (range.empty()) continue;
    size_t dash = range.find('-');
    int first = std::atoi(range.substr(0, dash).c_str());
    int last = dash == std::string::npos ? first : std::atoi(range.substr(dash + 1).c_str());
    for (int cpu = first; cpu <= last && cpu >= 0; ++cpu) cpus.insert(cpu);
  }
  return cpus;
}

// The kernel's cpumap format (what node*/cpumap holds and NCCL writes as affinity).
std::string formatCpuMask(const std::set<int>& cpus) {
  int highestCpu = cpus.empty() ? 0 : *cpus.rbegin();
  int words = highestCpu / 32 + 1;
  std::string mask;
  for (int word = words - 1; word >= 0; --word) {
    uint32_t bits = 0;
    for (int bit = 0; bit < 32; ++bit) {
      if (cpus.count(word * 32 + bit)) bits |= 1u << bit;
    }
    // Like the kernel, the top word has only the digits the CPU count needs.
    int bitsInWord = word == words - 1 ? highestCpu + 1 - word * 32 : 32;
    char text[16];
    std::snprintf(text, sizeof(text), "%0*x", std::max(1, (bitsInWord + 3) / 4), bits);
    if (!mask.empty()) mask += ',';
    mask += text;
  }
  return mask;
}

int numaOfPciFunction(const fs::path& sysfsRoot, const std::string& busId) {
  auto numa = readInteger(sysfsRoot / "bus/pci/devices" / busId / "numa_node");
  return numa ? static_cast<int>(*numa) : -1;
}

// The PCI function a class device (net interface, RDMA device) belongs to: its `device` link
// leads to the function itself (mlx5) or to a child of it (virtio-net's virtioN).
std::string pciFunctionOf(const fs::path& classDevice) {
  fs::path device = classDevice / "device";
  if (!pathExists(device)) return "";
  return lastPciBusIdInPath(resolve(device).string());
}

std::vector<NetPort> readRdmaPorts(const fs::path& sysfsRoot) {
  std::vector<NetPort> ports;
  fs::path classDir = sysfsRoot / "class/infiniband";
  for (const std::string& name : listDirectory(classDir)) {
    fs::path device = classDir / name;
    std::string busId = pciFunctionOf(device);
    uint64_t guid = parseGuid(readAttribute(device / "node_guid").value_or(""));
    for (const std::string& portName : listDirectory(device / "ports")) {
      fs::path port = device / "ports" / portName;
      // NCCL lists only ACTIVE ports; a port whose state cannot be read is kept.
      auto state = readAttribute(port / "state");
      if (state && state->find("ACTIVE") == std::string::npos) continue;
      NetPort net;
      net.attrs.name = name;
      net.attrs.port = std::atoi(portName.c_str());
      net.attrs.guid = guid;
      double mbps = parseRdmaRateMbps(readAttribute(port / "rate").value_or(""));
      net.attrs.speedMbps = mbps > 0 ? mbps : kDefaultNetSpeedMbps;
      net.pciBusId = busId;
      net.numaId = busId.empty() ? -1 : numaOfPciFunction(sysfsRoot, busId);
      net.infiniband = true;
      net.linkLayer = readAttribute(port / "link_layer").value_or("");
      ports.push_back(net);
    }
  }
  return ports;
}

double interfaceSpeedMbps(const fs::path& interface) {
  auto speed = readInteger(interface / "speed");
  return speed && *speed > 0 ? static_cast<double>(*speed) : kDefaultNetSpeedMbps;
}

}  // namespace

bool isPciBusId(const std::string& text) {
  // dddd:bb:dd.f with hex digits; domains may be wider than 4 digits (NVML, some VMs).
  size_t firstColon = text.find(':');
  if (firstColon == std::string::npos || firstColon < 4) return false;
  if (text.size() != firstColon + 8) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool separator = i == firstColon || i == firstColon + 3 || i == firstColon + 6;
    if (separator) {
      if (c != (i == firstColon + 6 ? '.' : ':')) return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

std::string lastPciBusIdInPath(const std::string& path) {
  std::string found;
  for (const auto& part : fs::path(path)) {
    std::string name = part.string();
    if (isPciBusId(name)) found = toLower(name);
  }
  return found;
}

double parseRdmaRateMbps(const std::string& rate) {
  char* end = nullptr;
  double value = std::strtod(rate.c_str(), &end);
  if (end == rate.c_str() || value <= 0) return 0;
  std::string unit = trim(end);
  if (unit.rfind("Gb/s", 0) == 0 || unit.rfind("Gb/sec", 0) == 0) return value * 1000.0;
  if (unit.rfind("Mb/s", 0) == 0 || unit.rfind("Mb/sec", 0) == 0) return value;
  return 0;
}

uint64_t parseGuid(const std::string& text) {
  std::string digits;
  std::string body = text.rfind("0x", 0) == 0 ? text.substr(2) : text;
  for (char c : body) {
    if (c == ':') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return 0;
    digits += c;
  }
  if (digits.empty() || digits.size() > 16) return 0;
  return std::strtoull(digits.c_str(), nullptr, 16);
}

std::string machineArch() {
  utsname name{};
  if (uname(&name) != 0) return "";
  std::string machine = name.machine;
  if (machine == "aarch64" || machine == "arm64") return "arm64";
  if (machine.rfind("ppc64", 0) == 0) return "ppc64";
  return machine;
}

CpuAttributes parseCpuInfo(const std::string& cpuinfoText) {
  CpuAttributes cpu;
  cpu.arch = machineArch();
  std::stringstream stream(cpuinfoText);
  std::string line;
  while (std::getline(stream, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    // Only the first processor's block counts: every core of a host has the same identity.
    if (key == "vendor_id" && cpu.vendor.empty()) {
      cpu.vendor = value;
    } else if (key == "cpu family" && cpu.familyId < 0) {
      cpu.familyId = std::atoi(value.c_str());
    } else if (key == "model" && cpu.modelId < 0) {
      cpu.modelId = std::atoi(value.c_str());
    }
  }
  return cpu;
}

std::vector<NumaDomain> readNumaDomains(const std::string& sysfsRoot) {
  std::vector<NumaDomain> domains;
  fs::path nodeDir = fs::path(sysfsRoot) / "devices/system/node";
  for (const std::string& name : listDirectory(nodeDir)) {
    if (name.size() <= 4 || name.rfind("node", 0) != 0) continue;
    if (!std::all_of(name.begin() + 4, name.end(), ::isdigit)) continue;
    auto cpumap = readAttribute(nodeDir / name / "cpumap");
    // Memory-only domains (GPU memory on Grace Hopper, CXL expanders) have no CPU to hang
    // devices from.
    if (!cpumap || cpumap->find_first_not_of("0,") == std::string::npos) continue;
    domains.push_back(NumaDomain{std::atoi(name.c_str() + 4), *cpumap});
  }
  std::sort(domains.begin(), domains.end(),
            [](const NumaDomain& a, const NumaDomain& b) { return a.numaId < b.numaId; });
  if (domains.empty()) {
    // A kernel without NUMA support: the whole machine is domain 0.
    std::string online =
        readAttribute(fs::path(sysfsRoot) / "devices/system/cpu/online").value_or("0");
    domains.push_back(NumaDomain{0, formatCpuMask(parseCpuList(online))});
  }
  return domains;
}

void readPciLink(const std::string& sysfsRoot, PciAttributes& attrs) {
  fs::path device = fs::path(sysfsRoot) / "bus/pci/devices" / attrs.busId;
  if (auto pciClass = readAttribute(device / "class")) attrs.pciClass = *pciClass;
  if (auto speed = readAttribute(device / "current_link_speed")) attrs.linkSpeed = *speed;
  if (auto width = readInteger(device / "current_link_width")) {
    attrs.linkWidth = static_cast<int>(*width);
  }
}

std::vector<PciFunction> readPciFunctions(const std::string& sysfsRoot) {
  std::vector<PciFunction> functions;
  fs::path devices = fs::path(sysfsRoot) / "bus/pci/devices";
  for (const std::string& name : listDirectory(devices)) {
    if (!isPciBusId(name)) continue;
    fs::path device = devices / name;
    PciFunction function;
    function.attrs.busId = toLower(name);
    function.attrs.vendor = readAttribute(device / "vendor").value_or("");
    function.attrs.device = readAttribute(device / "device").value_or("");
    function.attrs.subsystemVendor = readAttribute(device / "subsystem_vendor").value_or("");
    function.attrs.subsystemDevice = readAttribute(device / "subsystem_device").value_or("");
    readPciLink(sysfsRoot, function.attrs);
    // The directory above a function in /sys/devices is its upstream bridge, or the root bus
    // ("pci0000:00") for a function on a root bus.
    std::string parent = resolve(device).parent_path().filename().string();
    function.parentBusId = isPciBusId(parent) ? toLower(parent) : "";
    function.numaId = numaOfPciFunction(sysfsRoot, name);
    functions.push_back(function);
  }
  return functions;
}

std::vector<NetPort> readNetPorts(const std::string& sysfsRoot) {
  fs::path root(sysfsRoot);
  std::vector<NetPort> ports = readRdmaPorts(root);
  // A function with an RDMA device is described by its RDMA ports; its netdev (RoCE's ethX,
  // IPoIB's ibX) is the same wire and would count the bandwidth twice.
  std::set<std::string> rdmaFunctions;
  for (const NetPort& port : ports) rdmaFunctions.insert(port.pciBusId);

  fs::path classDir = root / "class/net";
  for (const std::string& name : listDirectory(classDir)) {
    fs::path interface = classDir / name;
    // ARPHRD_LOOPBACK is 772; "lo" is checked too for trees without a `type` file.
    if (name == "lo" || readInteger(interface / "type").value_or(0) == 772) continue;
    NetPort net;
    net.attrs.name = name;
    net.attrs.speedMbps = interfaceSpeedMbps(interface);
    net.attrs.port = static_cast<int>(readInteger(interface / "dev_port").value_or(0)) + 1;
    net.pciBusId = pciFunctionOf(interface);
    if (!net.pciBusId.empty()) {
      if (rdmaFunctions.count(net.pciBusId)) continue;
      net.numaId = numaOfPciFunction(root, net.pciBusId);
    } else {
      // Virtual devices: only bonds carry traffic of their own hardware; bridges, veth, tun
      // and ifb devices ride on other ports (or on none) and are left out.
      if (!pathExists(interface / "bonding")) continue;
      std::string slaves = readAttribute(interface / "bonding/slaves").value_or("");
      std::string firstSlave = slaves.substr(0, slaves.find(' '));
      if (!firstSlave.empty()) {
        std::string slaveFunction = pciFunctionOf(classDir / firstSlave);
        if (!slaveFunction.empty()) net.numaId = numaOfPciFunction(root, slaveFunction);
      }
    }
    ports.push_back(net);
  }
  return ports;
}

}  // namespace loom::topology
