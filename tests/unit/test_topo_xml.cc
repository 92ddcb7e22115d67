// SPDX-License-Identifier: Apache-2.0
// The XML reader/writer (xml_document.h) and NCCL topology XML in and out (topo_xml.h): parser edge cases and errors, every real and
// synthetic machine file loading with the counts read from it by eye, and round trips.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "topology/link_bandwidth.h"
#include "topology/system.h"
#include "topology/topo_xml.h"
#include "topology/xml_document.h"

namespace loom::topology {
namespace {

namespace fs = std::filesystem;

std::string dataDir() {
  const char* dir = std::getenv("LOOM_TEST_DATA");
  return dir ? dir : "tests/data";
}

std::string readText(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

std::vector<std::string> machineFiles(const std::string& subdir) {
  std::vector<std::string> files;
  const fs::path dir = fs::path(dataDir()) / "topo" / subdir;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool graph = name.size() > 10 && name.substr(name.size() - 10) == ".graph.xml";
    if (entry.path().extension() == ".xml" && !graph) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

System loadReal(const std::string& name) {
  return readTopologyFile(dataDir() + "/topo/real/" + name);
}

int countOf(const System& s, NodeType type) { return static_cast<int>(s.nodesOfType(type).size()); }

const Link* findLink(const System& s, int from, int to, LinkType type) {
  for (const Link& link : s.node(from).links) {
    if (link.to == to && link.type == type) return &link;
  }
  return nullptr;
}

// The message of the loom::Error `parse` throws ("" and a test failure if none).
template <typename F>
std::string errorOf(F&& parse) {
  try {
    parse();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), loomInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

std::string xmlError(const std::string& text) {
  return errorOf([&] { parseXml(text, "t.xml"); });
}

// ---------------------------------------------------------------- XML reader and writer

TEST(XmlDocument, ElementsAttributesEntitiesAndComments) {
  const XmlElement root = parseXml(
      "<?xml version=\"1.0\"?>\n<!-- head -->\n<root a=\"1\" b='x\"y'>\n"
      "  <child v=\"&lt;&gt;&amp;&quot;&apos;&#65;&#x42;&#xe9;\"/>  <!-- c -->\n"
      "  <child v = 'two' ></child>\n  text &amp; more\n</root>\n<!-- tail -->\n",
      "t.xml");
  EXPECT_EQ(root.name, "root");
  ASSERT_EQ(root.attributes.size(), 2u);
  EXPECT_EQ(root.attributes[0].first, "a");
  EXPECT_EQ(root.attributeOr("b", ""), "x\"y");
  ASSERT_EQ(root.children.size(), 2u);
  EXPECT_EQ(root.children[0].attributeOr("v", ""), "<>&\"'AB\xc3\xa9");
  EXPECT_EQ(root.children[1].attributeOr("v", ""), "two");
  EXPECT_EQ(root.children[0].line, 4);
  EXPECT_EQ(root.children[1].line, 5);
  EXPECT_EQ(root.attribute("missing"), nullptr);
}

TEST(XmlDocument, WriterEscapesAndRoundTrips) {
  XmlElement root;
  root.name = "system";
  root.setAttribute("z", "first");
  root.setAttribute("a", "<&>\"' \n\ttab");
  root.addChild("leaf").setAttribute("k", "v");
  XmlElement& inner = root.addChild("inner");
  inner.addChild("deep");
  const std::string text = writeXml(root);
  EXPECT_EQ(text,
            "<system z=\"first\" a=\"&lt;&amp;&gt;&quot;' &#10;&#9;tab\">\n"
            "  <leaf k=\"v\"/>\n  <inner>\n    <deep/>\n  </inner>\n</system>\n");
  const XmlElement back = parseXml(text, "w.xml");
  EXPECT_EQ(back.attributes, root.attributes);
  EXPECT_EQ(writeXml(back), text);
}

TEST(XmlDocument, ErrorsNameTheLine) {
  // clang-format off
  const std::pair<const char*, const char*> cases[] = {
      {"<a\n  x=\"&bogus;\"/>", "t.xml:2: unknown entity"}, {"<a x=1/>", "quoted"},
      {"<a>\n<!-- open\n</a>", "t.xml:2: unterminated comment"}, {"<a x='<'/>", "'<' inside"},
      {"<a x='1' x='2'/>", "duplicate attribute"}, {"<a x='1'y='2'/>", "white space"},
      {"<a x='&amp'/>", "entity"}, {"junk<a/>", "outside the root"}, {"", "no root element"},
      {"<a/><b/>", "more than one root"}, {"<!-- only -->", "no root element"},
      {"<!DOCTYPE a><a/>", "DOCTYPE"}, {"<a><![CDATA[x]]></a>", "CDATA"},
      {"</a>", "without a start tag"}, {"<a x='&#0;'/>", "invalid code point"},
      {"<a x='&#x110000;'/>", "out of range"}, {"<1a/>", "expected a name"}};
  // clang-format on
  for (const auto& [text, expected] : cases) {
    EXPECT_NE(xmlError(text).find(expected), std::string::npos) << text << " -> " << expected;
  }
  EXPECT_NE(xmlError("<a>\n<b>\n</c>\n</a>")
                .find("t.xml:3: end tag </c> does not match <b> opened on line 2"),
            std::string::npos);
}

TEST(XmlDocument, DepthIsBounded) {
  auto nested = [](int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i) text += "<e>";
    for (int i = 0; i < depth; ++i) text += "</e>";
    return text;
  };
  EXPECT_NO_THROW(parseXml(nested(kMaxXmlDepth), "t.xml"));
  EXPECT_NE(xmlError(nested(kMaxXmlDepth + 1)).find("deeper than 64"), std::string::npos);
  // Far deeper than any stack would take if the parser recursed.
  EXPECT_NE(xmlError(nested(200000)).find("deeper than 64"), std::string::npos);
}

TEST(XmlDocument, EveryTruncationOfARealFileFailsCleanly) {
  const std::string text = readText(dataDir() + "/topo/real/azure-ncv4-a100x4-pcie.xml");
  ASSERT_GT(text.size(), 1000u);
  // Ends with "</system>\n": every shorter prefix is incomplete.
  for (size_t length = 0; length + 1 < text.size(); ++length) {
    const std::string prefix = text.substr(0, length);
    try {
      parseTopologyXml(prefix, "cut.xml");
      ADD_FAILURE() << "a prefix of " << length << " bytes parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), loomInvalidArgument);
    }
  }
}

// ---------------------------------------------------------------- topology files

// load -> write -> load gives an equal model, and writing that again gives the same text.
void expectRoundTrip(const System& loaded, const std::string& name) {
  const std::string written = writeTopologyXml(loaded);
  const System reloaded = parseTopologyXml(written, name + " (rewritten)");
  EXPECT_EQ(compareSystems(loaded, reloaded), "") << name << "\n" << written;
  EXPECT_EQ(writeTopologyXml(reloaded), written) << name;
}

TEST(TopoXml, EveryRealFileLoadsAndRoundTrips) {
  const std::vector<std::string> files = machineFiles("real");
  EXPECT_GE(files.size(), 20u);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    System system;
    ASSERT_NO_THROW(system = readTopologyFile(path));
    expectRoundTrip(system, path);
  }
}

TEST(TopoXml, EverySyntheticFileLoadsAndRoundTrips) {
  // Written by another helper; iterate the directory so new machines are covered too.
  for (const std::string& path : machineFiles("synthetic")) {
    SCOPED_TRACE(path);
    System system;
    ASSERT_NO_THROW(system = readTopologyFile(path));
    EXPECT_GE(countOf(system, NodeType::Gpu), 1);
    expectRoundTrip(system, path);
  }
}

struct ExpectedCounts {
  const char* file;
  int cpus, gpus, nics, nets, nvSwitches;
};

TEST(TopoXml, RealFilesHaveTheCountsTheyDescribe) {
  // Read from the files by eye (see tests/data/topo/real/SOURCES.md for what each is). NICs
  // listed without <net> (Azure ND, AWS p4d) get one inferred port each.
  const ExpectedCounts expected[] = {
      {"azure-ndv2-v100x8.xml", 2, 8, 1, 1, 0},
      {"azure-ndv4-a100x8.xml", 4, 8, 8, 8, 0},
      {"azure-ncv4-a100x4-pcie.xml", 4, 4, 1, 1, 0},
      {"azure-ncv4-a100x4-nvlinkpairs-2023.xml", 4, 4, 1, 1, 0},
      {"aws-p4d.24xlarge-a100x8-efa4.xml", 2, 8, 4, 4, 0},
      {"aws-p5.48xlarge-h100x8-efa32-pcionly.xml", 2, 0, 0, 0, 0},  // nothing classified
      {"aws-g5.48xlarge-a10gx8-pcionly.xml", 2, 0, 0, 0, 0},
      {"simai-hgx-a100x8-5nic-bond.xml", 2, 8, 5, 5, 1},
      {"rccl-model-topo_8p_940-mi300x-8nic.xml", 2, 8, 8, 8, 0},
      {"rccl-model-topo_4p_940-mi300a-4apu-slingshot.xml", 4, 4, 4, 4, 0},
      {"rccl-model-topo_8p_ts1_n4-vega20-nps4.xml", 8, 8, 2, 2, 0},
      {"rccl-model-topo_16p1h-mi250-16gcd.xml", 4, 16, 8, 8, 0},
      {"rccl-model-topo_8p_rome_pcie-2socket.xml", 2, 8, 1, 2, 0},
  };
  for (const ExpectedCounts& e : expected) {
    SCOPED_TRACE(e.file);
    const System s = loadReal(e.file);
    EXPECT_EQ(countOf(s, NodeType::Cpu), e.cpus);
    EXPECT_EQ(countOf(s, NodeType::Gpu), e.gpus);
    EXPECT_EQ(countOf(s, NodeType::Nic), e.nics);
    EXPECT_EQ(countOf(s, NodeType::Net), e.nets);
    EXPECT_EQ(countOf(s, NodeType::NvSwitch), e.nvSwitches);
  }
}

TEST(TopoXml, NicsWithoutNetGetOneInferredPortThatDumpsLeaveOut) {
  const System s = loadReal("azure-ndv4-a100x8.xml");
  std::set<int> devs;
  for (int net : s.nodesOfType(NodeType::Net)) {
    const Node& node = s.node(net);
    EXPECT_EQ(node.extra.at(kInferredNetElement).at(kInferredNetAttribute), "1");
    devs.insert(node.net.dev);
  }
  EXPECT_EQ(devs, (std::set<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // The dump describes the file, not the inference: no <net>, and it reads back equal.
  const std::string dump = writeTopologyXml(s);
  EXPECT_EQ(dump.find("<net"), std::string::npos) << dump;
  EXPECT_EQ(compareSystems(s, parseTopologyXml(dump, "dump")), "");
}

TEST(TopoXml, P5UnclassifiedLeavesStayPciNodes) {
  // 2 sockets x 4 switches x 4 children, none with a class: 8 + 32 PCI nodes, link speed
  // "32 GT/s PCIe/s" read as Gen5.
  const System s = loadReal("aws-p5.48xlarge-h100x8-efa32-pcionly.xml");
  EXPECT_EQ(countOf(s, NodeType::Pci), 40);
  const int leaf = s.findByBusId("0000:4f:00.0");
  const int sw = s.findByBusId("0000:45:00.0");
  ASSERT_GE(leaf, 0);
  ASSERT_GE(sw, 0);
  const Link* link = findLink(s, sw, leaf, LinkType::Pci);
  ASSERT_NE(link, nullptr);
  EXPECT_DOUBLE_EQ(link->bandwidth, 48.0);
  // The switch itself has neither speed nor width: Gen3 ("Unknown") x16.
  EXPECT_DOUBLE_EQ(findLink(s, s.parentCpu(sw), sw, LinkType::Pci)->bandwidth, 12.0);
  EXPECT_EQ(s.parentCpu(leaf), s.findCpuByNuma(0));
}

TEST(TopoXml, ClassOnlyGpusAreNumberedInDocumentOrder) {
  const System s = loadReal("aws-p4d.24xlarge-a100x8-efa4.xml");  // also has XML comments
  const std::vector<int> gpus = s.nodesOfType(NodeType::Gpu);
  ASSERT_EQ(gpus.size(), 8u);
  for (size_t i = 0; i < gpus.size(); ++i) EXPECT_EQ(s.node(gpus[i]).gpu.dev, int(i));
  EXPECT_EQ(s.node(gpus[0]).pci.busId, "0000:10:1c.0");
  EXPECT_EQ(s.node(gpus[2]).pci.busId, "0000:20:1c.0");
  // Bare GPUs are written back bare, as the file had them.
  EXPECT_EQ(writeTopologyXml(s).find("<gpu"), std::string::npos);
}

TEST(TopoXml, GpuOrderIsByDev) {
  const System s = parseTopologyXml(R"(<system version="1"><cpu numaid="0">
      <pci busid="0000:01:00.0" class="0x030200"><gpu dev="1" sm="80"/></pci>
      <pci busid="0000:02:00.0" class="0x030200"><gpu dev="0" sm="80"/></pci>
      <pci busid="0000:03:00.0" class="0x030200"/>
    </cpu></system>)",
                                    "order.xml");
  const std::vector<int> gpus = s.nodesOfType(NodeType::Gpu);
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(s.node(gpus[0]).pci.busId, "0000:02:00.0");
  EXPECT_EQ(s.node(gpus[1]).pci.busId, "0000:01:00.0");
  EXPECT_EQ(s.node(gpus[2]).gpu.dev, 2);  // unnumbered: lowest free dev
  EXPECT_EQ(s.findGpuByDev(0), gpus[0]);
  // Links still point at the right nodes after the reordering.
  for (int gpu : gpus) EXPECT_EQ(s.parentCpu(gpu), 0);
  expectRoundTrip(s, "order.xml");

  const System vm = loadReal("rccl-model-topo_8p_940vm-mi300x-vm.xml");
  const std::vector<int> vmGpus = vm.nodesOfType(NodeType::Gpu);
  for (size_t i = 0; i < vmGpus.size(); ++i) EXPECT_EQ(vm.node(vmGpus[i]).gpu.dev, int(i));
}

TEST(TopoXml, NvlinkToItselfIsIgnoredAndPairsAreLinked) {
  const System self = loadReal("azure-ncv4-a100x4-pcie.xml");
  for (int gpu : self.nodesOfType(NodeType::Gpu)) {
    for (const Link& link : self.node(gpu).links) EXPECT_NE(link.type, LinkType::NvLink);
  }
  const System pairs = loadReal("azure-ncv4-a100x4-nvlinkpairs-2023.xml");
  const int g0 = pairs.findGpuByDev(0), g1 = pairs.findGpuByDev(1), g2 = pairs.findGpuByDev(2);
  ASSERT_NE(findLink(pairs, g0, g1, LinkType::NvLink), nullptr);
  EXPECT_DOUBLE_EQ(findLink(pairs, g0, g1, LinkType::NvLink)->bandwidth, 12 * 20.0);
  EXPECT_DOUBLE_EQ(findLink(pairs, g1, g0, LinkType::NvLink)->bandwidth, 12 * 20.0);
  EXPECT_EQ(findLink(pairs, g0, g2, LinkType::NvLink), nullptr);
}

TEST(TopoXml, NicDirectlyUnderCpu) {
  const System s = loadReal("azure-ncv4-a100x4-pcie.xml");
  const std::vector<int> nics = s.nodesOfType(NodeType::Nic);
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_EQ(s.node(nics[0]).pci.busId, "");
  EXPECT_EQ(s.parentCpu(nics[0]), s.findCpuByNuma(0));
  const int net = s.nodesOfType(NodeType::Net)[0];
  EXPECT_EQ(s.node(net).net.name, "eth0");
  EXPECT_EQ(s.node(net).net.port, 0);
  EXPECT_DOUBLE_EQ(findLink(s, nics[0], net, LinkType::Network)->bandwidth, 12.5);
  EXPECT_NE(writeTopologyXml(s).find("  <cpu numaid=\"0\""), std::string::npos);
}

const char* kSwitchedMachine = R"(<system version="1">
  <cpu numaid="0" vendor="GenuineIntel" familyid="6" modelid="143" host_hash="0xabc">
    <pci busid="0000:A1:00.0" class="0x060400" link_speed="2.5 GT/s PCIe" link_width="1">
      <pci busid="0000:a4:00.0" class="0x030200" vendor="0x10de" link_speed="32.0 GT/s PCIe" link_width="0">
        <gpu dev="0" sm="90" rank="0" gdr="1" future="yes">
          <nvlink target="0000:f5:00.0" count="5" tclass="0x068000"/>
          <nvlink target="0000:f4:00.0" count="5" tclass="0x068000"/>
          <nvlink target="0000:f3:00.0" count="4" tclass="0x068000"/>
          <nvlink target="0000:f6:00.0" count="4" tclass="0x068000"/>
          <nvlink target="0000:99:00.0" count="2" tclass="0x030200"/>
          <nvlink target="0000:a4:00.0" count="2" tclass="0x030200"/>
          <mystery/>
        </gpu>
      </pci>
      <pci busid="0000:a3:00.0" class="0x020000" link_speed="32.0 GT/s PCIe" link_width="0">
        <nic>
          <net name="mlx5_0" dev="0" speed="200000" port="1" latency="0.000000" guid="0x34f4e30003e1a258" maxconn="131072" gdr="1" net="1" gin="1"/>
        </nic>
      </pci>
    </pci>
  </cpu>
  <cpu numaid="1" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:b4:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="90" rank="1" gdr="1">
        <nvlink target="0000:f6:00.0" count="4" tclass="0x068000"/>
        <nvlink target="0000:f4:00.0" count="5" tclass="0x068000"/>
        <nvlink target="0000:f5:00.0" count="5" tclass="0x068000"/>
        <nvlink target="0000:f3:00.0" count="4" tclass="0x068000"/>
      </gpu>
    </pci>
  </cpu>
</system>)";

TEST(TopoXml, NvSwitchesFoldIntoOneNode) {
  const System s = parseTopologyXml(kSwitchedMachine, "switched.xml");
  const std::vector<int> switches = s.nodesOfType(NodeType::NvSwitch);
  ASSERT_EQ(switches.size(), 1u);
  const Node& fabric = s.node(switches[0]);
  EXPECT_EQ(fabric.nvSwitchCount, 4);
  EXPECT_EQ(fabric.pci.busId, "0000:f5:00.0");
  for (int dev = 0; dev < 2; ++dev) {
    const int gpu = s.findGpuByDev(dev);
    // 18 links x 20.6 GB/s each way; the invisible GPU 99 and the self link are ignored.
    ASSERT_NE(findLink(s, gpu, switches[0], LinkType::NvLink), nullptr);
    EXPECT_NEAR(findLink(s, gpu, switches[0], LinkType::NvLink)->bandwidth, 18 * 20.6, 1e-9);
    EXPECT_NEAR(findLink(s, switches[0], gpu, LinkType::NvLink)->bandwidth, 18 * 20.6, 1e-9);
    int nvlinks = 0;
    for (const Link& link : s.node(gpu).links) nvlinks += link.type == LinkType::NvLink;
    EXPECT_EQ(nvlinks, 1);
  }
  const std::string written = writeTopologyXml(s);
  EXPECT_NE(written.find("<nvlink target=\"0000:f5:00.0\" count=\"5\" tclass=\"0x068000\"/>"),
            std::string::npos);
  EXPECT_NE(written.find("<nvlink target=\"0000:f6:00.0\" count=\"4\" tclass=\"0x068000\"/>"),
            std::string::npos);
  expectRoundTrip(s, "switched.xml");

  const System hgx = loadReal("simai-hgx-a100x8-5nic-bond.xml");
  const int hgxSwitch = hgx.nodesOfType(NodeType::NvSwitch)[0];
  EXPECT_EQ(hgx.node(hgxSwitch).nvSwitchCount, 6);
  EXPECT_DOUBLE_EQ(findLink(hgx, hgx.findGpuByDev(3), hgxSwitch, LinkType::NvLink)->bandwidth,
                   12 * 20.0);
}

TEST(TopoXml, WidthZeroBusIdCaseSocketsAndUnknownAttributes) {
  const System s = parseTopologyXml(kSwitchedMachine, "switched.xml");
  const int bridge = s.findByBusId("0000:a1:00.0");  // upper case in the file
  ASSERT_GE(bridge, 0);
  const int gpu = s.findGpuByDev(0);
  // link_width="0": x16 of Gen5; the bridge's x1 2.5 GT/s is its own link to the CPU.
  EXPECT_DOUBLE_EQ(findLink(s, bridge, gpu, LinkType::Pci)->bandwidth, 48.0);
  EXPECT_DOUBLE_EQ(findLink(s, s.findCpuByNuma(0), bridge, LinkType::Pci)->bandwidth, 0.1875);
  // Sapphire Rapids sockets.
  const Link* upi = findLink(s, s.findCpuByNuma(0), s.findCpuByNuma(1), LinkType::InterSocket);
  ASSERT_NE(upi, nullptr);
  EXPECT_DOUBLE_EQ(upi->bandwidth, 22.0);
  // Unknown attributes are kept per element and written back.
  EXPECT_EQ(s.node(gpu).extra.at("gpu").at("future"), "yes");
  EXPECT_EQ(s.node(s.findCpuByNuma(0)).extra.at("cpu").at("host_hash"), "0xabc");
  const int net = s.nodesOfType(NodeType::Net)[0];
  EXPECT_EQ(s.node(net).extra.at("net").at("gin"), "1");
  EXPECT_EQ(s.node(net).net.guid, 0x34f4e30003e1a258ull);
  EXPECT_TRUE(s.node(net).net.gdr);
  const std::string written = writeTopologyXml(s);
  EXPECT_NE(written.find("future=\"yes\""), std::string::npos);
  EXPECT_NE(written.find("gin=\"1\""), std::string::npos);
  EXPECT_EQ(written.find("mystery"), std::string::npos);  // unknown element: skipped
}

TEST(TopoXml, XgmiMakesAmdNvlinks) {
  const System s = loadReal("rccl-model-topo_8p_940-mi300x-8nic.xml");
  EXPECT_EQ(s.version, 2);
  for (int gpu : s.nodesOfType(NodeType::Gpu)) {
    const Node& node = s.node(gpu);
    EXPECT_TRUE(node.gpu.amd);
    EXPECT_EQ(node.gpu.gcn, "gfx942");
    EXPECT_EQ(node.gpu.sm, 304);
    int xgmi = 0;
    for (const Link& link : node.links) {
      if (link.type != LinkType::NvLink) continue;
      ++xgmi;
      EXPECT_EQ(s.node(link.to).type, NodeType::Gpu);
      EXPECT_DOUBLE_EQ(link.bandwidth, 64.0);
    }
    EXPECT_EQ(xgmi, 7);
  }
  EXPECT_NE(writeTopologyXml(s).find("<xgmi target="), std::string::npos);
  EXPECT_EQ(writeTopologyXml(s).find("<nvlink"), std::string::npos);
  EXPECT_EQ(writeTopologyXml(s).rfind("<system version=\"2\">", 0), 0u);
}

TEST(TopoXml, SlingshotSpeedAndAmdSockets) {
  const System s = loadReal("rccl-model-topo_4p_940-mi300a-4apu-slingshot.xml");
  for (int net : s.nodesOfType(NodeType::Net)) {
    const Link& link = s.node(net).links.at(0);
    EXPECT_EQ(link.type, LinkType::Network);
    EXPECT_DOUBLE_EQ(link.bandwidth, 25.0);
  }
  const Link* fabric = findLink(s, s.findCpuByNuma(0), s.findCpuByNuma(1), LinkType::InterSocket);
  ASSERT_NE(fabric, nullptr);
  EXPECT_DOUBLE_EQ(fabric->bandwidth, 24.0);  // familyid 175 = Zen 3/4
}

TEST(TopoXml, C2cAndPcilink) {
  const char* text = R"(<system version="1">
    <cpu numaid="0" arch="arm64" vendor="ARM">
      <pci busid="0009:01:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="90" rank="0" gdr="1"><c2c count="10" bw="45000"/></gpu>
      </pci>
      <pci busid="0000:10:00.0" class="0x060400"><pcilink target="0000:20:00.0"/>
        <pci busid="0000:11:00.0" class="0x020700"/></pci>
      <pci busid="0000:20:00.0" class="0x060400"><pcilink target="0000:10:00.0"/>
        <pcilink target="0000:77:00.0"/></pci>
    </cpu></system>)";
  const System s = parseTopologyXml(text, "gh.xml");
  const int gpu = s.findGpuByDev(0), cpu = s.findCpuByNuma(0);
  ASSERT_NE(findLink(s, gpu, cpu, LinkType::C2c), nullptr);
  EXPECT_DOUBLE_EQ(findLink(s, gpu, cpu, LinkType::C2c)->bandwidth, 450.0);
  EXPECT_DOUBLE_EQ(findLink(s, cpu, gpu, LinkType::C2c)->bandwidth, 450.0);
  const int a = s.findByBusId("0000:10:00.0"), b = s.findByBusId("0000:20:00.0");
  ASSERT_NE(findLink(s, a, b, LinkType::Loc), nullptr);
  ASSERT_NE(findLink(s, b, a, LinkType::Loc), nullptr);
  EXPECT_EQ(countOf(s, NodeType::Nic), 1);  // class 0x020700 leaf
  const std::string written = writeTopologyXml(s);
  EXPECT_NE(written.find("<c2c count=\"10\" bw=\"45000\"/>"), std::string::npos);
  EXPECT_NE(written.find("<pcilink target=\"0000:20:00.0\"/>"), std::string::npos);
  expectRoundTrip(s, "gh.xml");
}

TEST(TopoXml, DamagedFilesLoadAndRoundTripOrFailCleanly) {
  // Byte changes, deletions and copies at places drawn from a fixed xorshift sequence.
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] { return state ^= state << 13, state ^= state >> 7, state ^= state << 17; };
  const char alphabet[] = "<>/=\"' &;!-?x0";
  int loaded = 0, refused = 0;
  for (const std::string& path : machineFiles("real")) {
    const std::string original = readText(path);
    for (int round = 0; round < 100; ++round) {
      std::string text = original;
      for (uint64_t edits = 1 + next() % 3; edits > 0; --edits) {
        const size_t at = next() % text.size();
        if (next() % 3 == 0)
          text[at] = alphabet[next() % (sizeof(alphabet) - 1)];
        else if (next() % 2 == 0)
          text.erase(at, 1 + next() % 16);
        else
          text.insert(at, text.substr(next() % text.size(), 1 + next() % 64));
      }
      try {
        const System s = parseTopologyXml(text, "damaged.xml");
        ++loaded;
        expectRoundTrip(s, path + " damaged");
      } catch (const Error& e) {
        ++refused;
        EXPECT_EQ(e.code(), loomInvalidArgument);
      }
    }
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(refused, 0);
}

TEST(TopoXml, MalformedTopologiesThrowWithLines) {
  auto topoError = [](const std::string& text) {
    return errorOf([&] { parseTopologyXml(text, "bad.xml"); });
  };
  EXPECT_NE(topoError("<graphs/>").find("not <system>"), std::string::npos);
  EXPECT_NE(topoError("<system>\n<cpu>\n<pci class='0x0604'/></cpu></system>")
                .find("bad.xml:3: <pci> without a busid"),
            std::string::npos);
  EXPECT_NE(topoError("<system><cpu>\n<pci busid='0000:01:00.0'/>\n<pci busid='0000:01:00.0'/>"
                      "</cpu></system>")
                .find("bad.xml:3: bus id 0000:01:00.0 appears twice (first on line 2)"),
            std::string::npos);
  EXPECT_NE(topoError("<system><cpu numaid='zero'/></system>").find("not an integer"),
            std::string::npos);
  EXPECT_NE(
      topoError("<system><cpu><nic><net speed='fast'/></nic></cpu></system>").find("not a number"),
      std::string::npos);
  EXPECT_NE(topoError("<system><cpu>\n<pci busid='0000:01:00.0'>").find("end of input"),
            std::string::npos);
  // Tolerated: unknown elements anywhere, empty system.
  EXPECT_NO_THROW(parseTopologyXml("<system version='1'><gin/><cpu><foo/></cpu></system>", "x"));
  EXPECT_EQ(parseTopologyXml("<system/>", "x").size(), 0);
}

TEST(TopoXml, FilesAreWrittenAtomicallyAndReadBack) {
  const System s = loadReal("azure-ndv5-h100x8.xml");
  const std::string path =
      (fs::temp_directory_path() / ("loom-topo-" + std::to_string(getpid()) + ".xml")).string();
  writeTopologyFile(s, path);
  const System back = readTopologyFile(path);
  EXPECT_EQ(compareSystems(s, back), "");
  EXPECT_EQ(back.source, path);  // the file name, for messages
  fs::remove(path);
  try {
    readTopologyFile(path);
    ADD_FAILURE() << "read a removed file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), loomSystemError);
  }
}

TEST(TopoXml, CompareSystemsNamesTheFirstDifference) {
  const System a = loadReal("azure-ndv2-v100x8.xml");
  System b = loadReal("azure-ndv2-v100x8.xml");
  EXPECT_EQ(compareSystems(a, b), "");
  b.node(b.findGpuByDev(3)).pci.linkWidth = 8;
  EXPECT_NE(compareSystems(a, b).find("(GPU/3) pci.linkWidth: 16 != 8"), std::string::npos)
      << compareSystems(a, b);
  System c = loadReal("azure-ndv2-v100x8.xml");
  c.node(0).links[0].bandwidth *= 2;
  EXPECT_NE(compareSystems(a, c).find("node 0 (CPU/0) link 0 bandwidth"), std::string::npos);
  EXPECT_EQ(nodeTypeName(NodeType::NvSwitch), std::string("NVS"));
  EXPECT_EQ(linkTypeName(LinkType::InterSocket), std::string("SYS"));
  EXPECT_EQ(a.node(a.nodesOfType(NodeType::Nic)[0]).label(), "NIC/0101:00:00.0");
}

}  // namespace
}  // namespace loom::topology
