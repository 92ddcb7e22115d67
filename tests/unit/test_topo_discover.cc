// SPDX-License-Identifier: Apache-2.0
// Host discovery: this machine's model (a CPU/NIC model without GPUs here), the sysfs readers
// on a fake sysfs tree built in a temporary directory, the small parsers, and the synthetic
// machines of tests/data/topo/synthetic (their counts and NVLink bandwidth per GPU).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "topology/discover.h"
#include "topology/host_inventory.h"
#include "topology/link_bandwidth.h"
#include "topology/system.h"

#if __has_include("topology/topo_xml.h")
#include "topology/topo_xml.h"
#define LOOM_TEST_HAVE_TOPO_XML 1
#else
#define LOOM_TEST_HAVE_TOPO_XML 0
#endif

namespace loom::topology {
namespace {

namespace fs = std::filesystem;

// A NIC, GPU or PCI switch reaches a CPU through PCI links; a NET port through its NIC.
void expectEveryNodeReachesACpu(const System& system) {
  for (int i = 0; i < system.size(); ++i) {
    const Node& node = system.node(i);
    switch (node.type) {
      case NodeType::Cpu:
      case NodeType::NvSwitch:
        break;
      case NodeType::Net: {
        int nic = -1;
        for (const Link& link : node.links) {
          if (link.type == LinkType::Network && system.node(link.to).type == NodeType::Nic) {
            nic = link.to;
          }
        }
        ASSERT_GE(nic, 0) << node.label() << " has no NIC";
        EXPECT_GE(system.parentCpu(nic), 0) << node.label();
        break;
      }
      default:
        EXPECT_GE(system.parentCpu(i), 0) << node.label() << " reaches no CPU";
    }
  }
}

TEST(TopoDiscover, ThisHostYieldsACpuModel) {
  System system = discoverHost();
  EXPECT_GE(system.nodesOfType(NodeType::Cpu).size(), 1u);
  expectEveryNodeReachesACpu(system);
  if (!fs::exists("/dev/nvidia0") && !fs::exists("/dev/kfd")) {
    EXPECT_TRUE(system.nodesOfType(NodeType::Gpu).empty());
  }
  for (int cpu : system.nodesOfType(NodeType::Cpu)) {
    EXPECT_FALSE(system.node(cpu).cpu.affinity.empty());
    EXPECT_FALSE(system.node(cpu).cpu.arch.empty());
  }
  for (int net : system.nodesOfType(NodeType::Net)) {
    EXPECT_NE(system.node(net).net.name, "lo");
    EXPECT_GT(system.node(net).net.speedMbps, 0);
  }
}

TEST(TopoDiscover, ThisHostIsDeterministic) {
  EXPECT_EQ(compareSystems(discoverHost(), discoverHost()), "");
}

// hwloc (when built with it) and plain sysfs see the same devices on this machine.
TEST(TopoDiscover, HwlocAndSysfsFindTheSameDevices) {
  DiscoveryOptions sysfsOnly;
  sysfsOnly.useHwloc = false;
  System viaSysfs = discoverHost(sysfsOnly);
  System viaDefault = discoverHost();
  EXPECT_EQ(viaSysfs.source, "sysfs");
  auto describe = [](const System& system) {
    std::string text;
    for (const Node& node : system.nodes()) text += node.label() + " ";
    return text;
  };
  EXPECT_EQ(describe(viaSysfs), describe(viaDefault));
}

#if LOOM_TEST_HAVE_TOPO_XML
TEST(TopoDiscover, ThisHostDumpsAndReloadsEqual) {
  System system = discoverHost();
  std::string xml = writeTopologyXml(system);
  System reloaded = parseTopologyXml(xml, "discovered");
  EXPECT_EQ(compareSystems(system, reloaded), "") << xml;
}
#endif

// ---- a fake sysfs tree ----

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "loom-sysfs-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    build();
  }
  void TearDown() override {
    std::error_code error;
    fs::remove_all(root_, error);
  }

  void write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text << "\n";
  }
  void link(const std::string& path, const std::string& target) {
    fs::create_directories((root_ / path).parent_path());
    fs::create_directory_symlink(target, root_ / path);
  }
  // A PCI function at `dir` (under sys/devices), listed in sys/bus/pci/devices.
  void pci(const std::string& dir, const std::string& pciClass, const std::string& vendor, int numa,
           const std::string& speed = "", int width = 0) {
    std::string base = "sys/devices/" + dir;
    write(base + "/class", pciClass);
    write(base + "/vendor", vendor);
    write(base + "/device", "0x1234");
    write(base + "/subsystem_vendor", vendor);
    write(base + "/subsystem_device", "0x0001");
    write(base + "/numa_node", std::to_string(numa));
    if (!speed.empty()) {
      write(base + "/current_link_speed", speed);
      write(base + "/current_link_width", std::to_string(width));
    }
    std::string busId = fs::path(dir).filename().string();
    link("sys/bus/pci/devices/" + busId, (root_ / base).string());
  }
  // A network interface whose directory is `dir` (under sys/devices).
  void netdev(const std::string& dir, const std::string& speed, bool hasDevice) {
    std::string base = "sys/devices/" + dir;
    write(base + "/speed", speed);
    write(base + "/type", "1");
    if (hasDevice) link(base + "/device", (root_ / base).parent_path().parent_path().string());
    link("sys/class/net/" + fs::path(dir).filename().string(), (root_ / base).string());
  }

  void build() {
    write("proc/cpuinfo",
          "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
          "model name\t: Intel(R) Xeon(R) Platinum 8480+\n\nprocessor\t: 1\n"
          "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n");
    write("sys/devices/system/node/node0/cpumap", "00000000,0000ffff");
    write("sys/devices/system/node/node1/cpumap", "00000000,ffff0000");
    write("sys/devices/system/node/node2/cpumap", "00000000,00000000");  // memory only
    write("sys/devices/system/node/online", "0-1");  // not a nodeN directory: ignored
    // Socket 0: root port -> switch (upstream, two downstream ports) -> GPU and an HDR NIC.
    const std::string sw = "pci0000:00/0000:00:01.0/0000:01:00.0";
    pci("pci0000:00/0000:00:01.0", "0x060400", "0x8086", 0, "16.0 GT/s PCIe", 16);
    pci(sw, "0x060400", "0x10b5", 0, "16.0 GT/s PCIe", 16);
    pci(sw + "/0000:02:00.0", "0x060400", "0x10b5", 0, "16.0 GT/s PCIe", 16);
    pci(sw + "/0000:02:00.0/0000:03:00.0", "0x030200", "0x10de", 0, "16.0 GT/s PCIe", 16);
    pci(sw + "/0000:02:01.0", "0x060400", "0x10b5", 0, "16.0 GT/s PCIe", 16);
    const std::string hca = sw + "/0000:02:01.0/0000:04:00.0";
    pci(hca, "0x020700", "0x15b3", 0, "16.0 GT/s PCIe", 16);
    std::string ib = "sys/devices/" + hca + "/infiniband/mlx5_0";
    write(ib + "/node_guid", "b8ce:f603:00a1:f000");
    write(ib + "/ports/1/rate", "200 Gb/sec (4X HDR)");
    write(ib + "/ports/1/state", "4: ACTIVE");
    write(ib + "/ports/1/link_layer", "InfiniBand");
    write(ib + "/ports/2/rate", "200 Gb/sec (4X HDR)");
    write(ib + "/ports/2/state", "1: DOWN");  // not listed
    link(ib + "/device", (root_ / "sys/devices" / hca).string());
    link("sys/class/infiniband/mlx5_0", (root_ / ib).string());
    netdev(hca + "/net/ib0", "200000", true);  // IPoIB on the same function: not listed again
    // Something that is neither GPU nor NIC: left out.
    pci("pci0000:00/0000:00:1f.2", "0x010802", "0x144d", 0);
    // A virtio NIC on the root bus, NUMA unknown, speed unknown (-1).
    pci("pci0000:00/0000:00:03.0", "0x020000", "0x1af4", -1);
    netdev("pci0000:00/0000:00:03.0/virtio2/net/eth0", "-1", true);
    // Socket 1: an Ethernet NIC behind a root port, and a bond over it.
    pci("pci0000:80/0000:80:02.0", "0x060400", "0x8086", 1, "32.0 GT/s PCIe", 16);
    pci("pci0000:80/0000:80:02.0/0000:81:00.0", "0x020000", "0x8086", 1, "32.0 GT/s PCIe", 8);
    netdev("pci0000:80/0000:80:02.0/0000:81:00.0/net/ens1", "25000", true);
    netdev("virtual/net/bond0", "50000", false);
    write("sys/devices/virtual/net/bond0/bonding/slaves", "ens1");
    netdev("virtual/net/docker0", "-1", false);  // a bridge: left out
    netdev("virtual/net/lo", "-1", false);
  }

  DiscoveryOptions options() const {
    DiscoveryOptions options;
    options.sysfsRoot = (root_ / "sys").string();
    options.procRoot = (root_ / "proc").string();
    options.useNvml = false;  // the fake GPU is unknown to any real driver
    return options;
  }

  fs::path root_;
};

TEST_F(FakeSysfs, ReadsNumaDomains) {
  auto domains = readNumaDomains(options().sysfsRoot);
  ASSERT_EQ(domains.size(), 2u);
  EXPECT_EQ(domains[0].numaId, 0);
  EXPECT_EQ(domains[0].affinity, "00000000,0000ffff");
  EXPECT_EQ(domains[1].numaId, 1);
}

TEST_F(FakeSysfs, NoNumaSupportMeansOneDomainOverOnlineCpus) {
  fs::remove_all(root_ / "sys/devices/system/node");
  write("sys/devices/system/cpu/online", "0-35");
  auto domains = readNumaDomains(options().sysfsRoot);
  ASSERT_EQ(domains.size(), 1u);
  EXPECT_EQ(domains[0].affinity, "f,ffffffff");
}

TEST_F(FakeSysfs, ReadsPciFunctionsWithTheirParents) {
  auto functions = readPciFunctions(options().sysfsRoot);
  ASSERT_EQ(functions.size(), 10u);
  std::map<std::string, PciFunction> byBusId;
  for (const auto& function : functions) byBusId[function.attrs.busId] = function;
  EXPECT_EQ(byBusId["0000:00:01.0"].parentBusId, "");
  EXPECT_EQ(byBusId["0000:03:00.0"].parentBusId, "0000:02:00.0");
  EXPECT_EQ(byBusId["0000:03:00.0"].attrs.pciClass, "0x030200");
  EXPECT_EQ(byBusId["0000:03:00.0"].attrs.linkSpeed, "16.0 GT/s PCIe");
  EXPECT_EQ(byBusId["0000:03:00.0"].attrs.linkWidth, 16);
  EXPECT_EQ(byBusId["0000:81:00.0"].numaId, 1);
  EXPECT_EQ(byBusId["0000:00:03.0"].numaId, -1);
}

TEST_F(FakeSysfs, ReadsNetworkPorts) {
  auto ports = readNetPorts(options().sysfsRoot);
  std::map<std::string, NetPort> byName;
  for (const auto& port : ports) byName[port.attrs.name] = port;
  ASSERT_EQ(ports.size(), 4u) << "mlx5_0 port 1, eth0, ens1, bond0";
  EXPECT_TRUE(byName["mlx5_0"].infiniband);
  EXPECT_EQ(byName["mlx5_0"].attrs.port, 1);
  EXPECT_EQ(byName["mlx5_0"].attrs.speedMbps, 200000);
  EXPECT_EQ(byName["mlx5_0"].attrs.guid, 0xb8cef60300a1f000ull);
  EXPECT_EQ(byName["mlx5_0"].linkLayer, "InfiniBand");
  EXPECT_EQ(byName["mlx5_0"].pciBusId, "0000:04:00.0");
  EXPECT_EQ(byName["eth0"].pciBusId, "0000:00:03.0");
  EXPECT_EQ(byName["eth0"].attrs.speedMbps, kDefaultNetSpeedMbps);
  EXPECT_EQ(byName["ens1"].attrs.speedMbps, 25000);
  EXPECT_EQ(byName["bond0"].pciBusId, "");
  EXPECT_EQ(byName["bond0"].numaId, 1);
  EXPECT_EQ(byName.count("ib0"), 0u);
  EXPECT_EQ(byName.count("docker0"), 0u);
  EXPECT_EQ(byName.count("lo"), 0u);
}

TEST_F(FakeSysfs, BuildsTheModel) {
  System system = discoverHost(options());
  EXPECT_EQ(system.source, "sysfs");
  expectEveryNodeReachesACpu(system);
  ASSERT_EQ(system.nodesOfType(NodeType::Cpu).size(), 2u);
  const Node& cpu0 = system.node(system.findCpuByNuma(0));
  EXPECT_EQ(cpu0.cpu.vendor, "GenuineIntel");
  EXPECT_EQ(cpu0.cpu.familyId, 6);
  EXPECT_EQ(cpu0.cpu.modelId, 143);
  EXPECT_EQ(cpu0.cpu.affinity, "00000000,0000ffff");

  // The root ports are left out; the switch's bridges are PCI nodes.
  EXPECT_EQ(system.findByBusId("0000:00:01.0"), -1);
  EXPECT_EQ(system.findByBusId("0000:80:02.0"), -1);
  EXPECT_EQ(system.findByBusId("0000:00:1f.2"), -1);
  EXPECT_EQ(system.nodesOfType(NodeType::Pci).size(), 3u);
  int upstream = system.findByBusId("0000:01:00.0");
  ASSERT_GE(upstream, 0);
  EXPECT_EQ(system.node(upstream).type, NodeType::Pci);

  auto gpus = system.nodesOfType(NodeType::Gpu);
  ASSERT_EQ(gpus.size(), 1u);
  const Node& gpu = system.node(gpus[0]);
  EXPECT_EQ(gpu.pci.busId, "0000:03:00.0");
  EXPECT_EQ(gpu.gpu.dev, 0);
  EXPECT_EQ(system.parentCpu(gpus[0]), system.findCpuByNuma(0));
  ASSERT_EQ(gpu.links.size(), 1u);
  EXPECT_EQ(gpu.links[0].to, system.findByBusId("0000:02:00.0"));
  EXPECT_DOUBLE_EQ(gpu.links[0].bandwidth, pciBandwidth("16.0 GT/s PCIe", 16));

  // NICs: the HCA, virtio, the Ethernet NIC and the bond's virtual NIC.
  auto nics = system.nodesOfType(NodeType::Nic);
  ASSERT_EQ(nics.size(), 4u);
  EXPECT_EQ(system.parentCpu(system.findByBusId("0000:00:03.0")), system.findCpuByNuma(0));
  EXPECT_EQ(system.parentCpu(system.findByBusId("0000:81:00.0")), system.findCpuByNuma(1));
  int bondNic = -1;
  for (int nic : nics) {
    if (system.node(nic).pci.busId.empty()) bondNic = nic;
  }
  ASSERT_GE(bondNic, 0);
  EXPECT_EQ(system.node(bondNic).extra.at("nic").at("virtual"), "1");
  EXPECT_EQ(system.parentCpu(bondNic), system.findCpuByNuma(1));

  // Network ports are numbered by name; the NIC -> NET link carries the port's speed.
  std::map<std::string, const Node*> nets;
  for (int net : system.nodesOfType(NodeType::Net))
    nets[system.node(net).net.name] = &system.node(net);
  ASSERT_EQ(nets.size(), 4u);
  EXPECT_EQ(nets["bond0"]->net.dev, 0);
  EXPECT_EQ(nets["ens1"]->net.dev, 1);
  EXPECT_EQ(nets["eth0"]->net.dev, 2);
  EXPECT_EQ(nets["mlx5_0"]->net.dev, 3);
  EXPECT_DOUBLE_EQ(nets["mlx5_0"]->links.at(0).bandwidth, netBandwidth(200000));
  EXPECT_DOUBLE_EQ(nets["eth0"]->links.at(0).bandwidth, netBandwidth(kDefaultNetSpeedMbps));

  // The two sockets are joined both ways.
  const Node& cpu1 = system.node(system.findCpuByNuma(1));
  bool joined = false;
  for (const Link& link : cpu1.links) {
    joined |= link.type == LinkType::InterSocket && link.to == system.findCpuByNuma(0);
  }
  EXPECT_TRUE(joined);
}

#if LOOM_TEST_HAVE_TOPO_XML
TEST_F(FakeSysfs, ModelDumpsAndReloadsEqual) {
  System system = discoverHost(options());
  std::string xml = writeTopologyXml(system);
  EXPECT_EQ(compareSystems(system, parseTopologyXml(xml, "fake sysfs")), "") << xml;
}
#endif

// DGX A100-like: the GPU with the lowest bus id sits under the second NUMA domain, so tree
// order and dev (bus) order differ. GPU slots still follow dev order and the dump reloads.
TEST_F(FakeSysfs, GpusFollowBusOrderAcrossDomains) {
  pci("pci0000:00/0000:00:05.0", "0x030200", "0x10de", 1, "16.0 GT/s PCIe", 16);
  System system = discoverHost(options());
  auto gpus = system.nodesOfType(NodeType::Gpu);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(system.node(gpus[0]).gpu.dev, 0);
  EXPECT_EQ(system.node(gpus[0]).pci.busId, "0000:00:05.0");
  EXPECT_EQ(system.parentCpu(gpus[0]), system.findCpuByNuma(1));
  EXPECT_EQ(system.node(gpus[1]).gpu.dev, 1);
  EXPECT_EQ(system.parentCpu(gpus[1]), system.findCpuByNuma(0));
  expectEveryNodeReachesACpu(system);
#if LOOM_TEST_HAVE_TOPO_XML
  std::string xml = writeTopologyXml(system);
  EXPECT_EQ(compareSystems(system, parseTopologyXml(xml, "fake sysfs")), "") << xml;
#endif
}

// ---- parsers ----

TEST(TopoDiscoverParsers, RdmaRate) {
  EXPECT_EQ(parseRdmaRateMbps("100 Gb/sec (4X EDR)"), 100000);
  EXPECT_EQ(parseRdmaRateMbps("2.5 Gb/sec (1X SDR)"), 2500);
  EXPECT_EQ(parseRdmaRateMbps("400 Gb/sec (4X NDR)"), 400000);
  EXPECT_EQ(parseRdmaRateMbps(""), 0);
  EXPECT_EQ(parseRdmaRateMbps("invalid"), 0);
}

TEST(TopoDiscoverParsers, Guid) {
  EXPECT_EQ(parseGuid("b8ce:f603:00a1:f000"), 0xb8cef60300a1f000ull);
  EXPECT_EQ(parseGuid("0x1e95b50003fd7010"), 0x1e95b50003fd7010ull);
  EXPECT_EQ(parseGuid("zz"), 0u);
  EXPECT_EQ(parseGuid(""), 0u);
}

TEST(TopoDiscoverParsers, PciBusIds) {
  EXPECT_TRUE(isPciBusId("0000:3b:00.0"));
  EXPECT_TRUE(isPciBusId("00000001:3B:00.1"));
  EXPECT_FALSE(isPciBusId("pci0000:00"));
  EXPECT_FALSE(isPciBusId("virtio2"));
  EXPECT_FALSE(isPciBusId("0000:3b:00"));
  EXPECT_EQ(lastPciBusIdInPath("/sys/devices/pci0000:00/0000:00:03.0/virtio2"), "0000:00:03.0");
  EXPECT_EQ(lastPciBusIdInPath("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"),
            "0000:01:00.0");
  EXPECT_EQ(lastPciBusIdInPath("/sys/devices/virtual/net/bond0"), "");
}

TEST(TopoDiscoverParsers, CpuInfo) {
  CpuAttributes cpu = parseCpuInfo(
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
      "model name\t: AMD EPYC 7763 64-Core Processor\n");
  EXPECT_EQ(cpu.vendor, "AuthenticAMD");
  EXPECT_EQ(cpu.familyId, 25);
  EXPECT_EQ(cpu.modelId, 1);
  EXPECT_EQ(cpu.arch, machineArch());
  CpuAttributes arm = parseCpuInfo("processor\t: 0\nCPU implementer\t: 0x41\n");
  EXPECT_EQ(arm.vendor, "");
  EXPECT_EQ(arm.familyId, -1);
}

// ---- synthetic machines ----

#if LOOM_TEST_HAVE_TOPO_XML
struct SyntheticMachine {
  const char* file;
  size_t cpus, gpus, nics, nets;
  int nvlinksPerGpu;  // links, each at the GPU generation's per-link bandwidth
  int nvSwitches;     // physical switches folded into the NvSwitch node (0: none)
};

class SyntheticMachines : public ::testing::TestWithParam<SyntheticMachine> {};

TEST_P(SyntheticMachines, HaveTheirCounts) {
  const SyntheticMachine& machine = GetParam();
  const char* data = std::getenv("LOOM_TEST_DATA");
  ASSERT_NE(data, nullptr) << "LOOM_TEST_DATA is not set";
  System system = readTopologyFile(std::string(data) + "/topo/synthetic/" + machine.file);
  EXPECT_EQ(system.nodesOfType(NodeType::Cpu).size(), machine.cpus);
  EXPECT_EQ(system.nodesOfType(NodeType::Gpu).size(), machine.gpus);
  EXPECT_EQ(system.nodesOfType(NodeType::Nic).size(), machine.nics);
  EXPECT_EQ(system.nodesOfType(NodeType::Net).size(), machine.nets);
  expectEveryNodeReachesACpu(system);
  for (int gpu : system.nodesOfType(NodeType::Gpu)) {
    double nvlink = 0;
    for (const Link& link : system.node(gpu).links) {
      if (link.type == LinkType::NvLink) nvlink += link.bandwidth;
    }
    EXPECT_NEAR(nvlink, machine.nvlinksPerGpu * gpuLinkBandwidth(system.node(gpu).gpu), 1e-9)
        << system.node(gpu).label();
  }
  auto switches = system.nodesOfType(NodeType::NvSwitch);
  if (machine.nvSwitches == 0) {
    EXPECT_TRUE(switches.empty());
  } else {
    ASSERT_EQ(switches.size(), 1u);
    EXPECT_EQ(system.node(switches[0]).nvSwitchCount, machine.nvSwitches);
  }
  // The files are in NCCL's format: they dump and reload to the same model.
  EXPECT_EQ(compareSystems(system, parseTopologyXml(writeTopologyXml(system), machine.file)), "");
}

INSTANTIATE_TEST_SUITE_P(
    Files, SyntheticMachines,
    ::testing::Values(SyntheticMachine{"dgx1-v100x8-hybrid-cube-mesh.xml", 2, 8, 4, 4, 6, 0},
                      SyntheticMachine{"a100x8-nvswitch6-nic8.xml", 2, 8, 8, 8, 12, 6},
                      SyntheticMachine{"h100x8-nvswitch4-nic8.xml", 2, 8, 8, 8, 18, 4},
                      SyntheticMachine{"pcie-2socket-gpu8-nic2.xml", 2, 8, 2, 2, 0, 0},
                      SyntheticMachine{"nvlink-mesh-gpu4.xml", 1, 4, 1, 1, 12, 0}),
    [](const ::testing::TestParamInfo<SyntheticMachine>& info) {
      std::string name = info.param.file;
      name = name.substr(0, name.find('.'));
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });
#endif

}  // namespace
}  // namespace loom::topology
