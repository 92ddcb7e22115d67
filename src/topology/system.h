// SPDX-License-Identifier: Apache-2.0
// The machine model: nodes (GPUs, PCI switches, NVSwitches, CPU sockets/NUMA domains, NICs and
// the network ports behind them) joined by directed links that carry a type and a bandwidth.
// Everything else in topology/ works on this model: the XML reader and writer fill and dump it,
// host discovery builds it from hwloc/sysfs, paths.h finds the best route between any two
// nodes, and search.h looks for rings and trees over it.
//
// Shape (as NCCL users know it): a CPU node per NUMA domain; PCI switches hang under CPUs;
// GPUs and NICs hang under switches or CPUs; every NIC owns one Net node per port/device; all
// NVSwitches of one machine are folded into one NvSwitch node whose link from each GPU carries
// that GPU's whole NVLink bandwidth to the fabric. Links come in pairs, one per direction, so
// the search can charge each direction separately.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::topology {

enum class NodeType : uint8_t { Gpu, Pci, NvSwitch, Cpu, Nic, Net };
constexpr int kNodeTypeCount = 6;
const char* nodeTypeName(NodeType type);  // "GPU", "PCI", "NVS", "CPU", "NIC", "NET"

enum class LinkType : uint8_t {
  Loc,          // a node to itself
  NvLink,       // NVLink, and AMD xGMI (same role: GPU-to-GPU fabric)
  C2c,          // chip-to-chip GPU<->CPU (Grace Hopper)
  Pci,          // PCIe, either direction of a parent/child pair
  InterSocket,  // CPU<->CPU (QPI/UPI, Infinity Fabric, ...)
  Network,      // NIC -> Net port, and Net <-> Net across nodes
};
const char* linkTypeName(LinkType type);  // "LOC", "NVL", "C2C", "PCI", "SYS", "NET"

struct Link {
  int to = -1;  // index of the node at the other end
  LinkType type = LinkType::Loc;
  double bandwidth = 0;  // GB/s, this direction only
};

struct CpuAttributes {
  int numaId = -1;
  std::string arch;     // "x86_64", "arm64", "ppc64"
  std::string vendor;   // "GenuineIntel", "AuthenticAMD", ...
  int familyId = -1;    // CPUID family / model where known (-1: unknown)
  int modelId = -1;
  std::string affinity; // cpuset mask as in the XML ("ffff,ffffffff")
};

struct PciAttributes {
  std::string busId;             // "0000:07:00.0", lower case, domain always present
  std::string pciClass;          // "0x060400" (bridge), "0x030200" (3D controller), ...
  std::string vendor, device, subsystemVendor, subsystemDevice;  // "0x10de", ...
  std::string linkSpeed;         // verbatim, e.g. "16.0 GT/s PCIe"
  int linkWidth = 0;             // lanes; 0 when unknown
};

struct GpuAttributes {
  int dev = -1;        // device index on its host
  int rank = -1;       // rank the XML assigned (often == dev)
  int sm = 0;          // CUDA compute capability x10 (90 = Hopper); RCCL: CU count
  std::string gcn;     // AMD gfx name ("gfx942") when given
  int arch = 0;        // RCCL's numeric arch attribute
  bool gdr = false;    // GPUDirect RDMA capable
  bool amd = false;    // from an RCCL file / AMD vendor id: NvLink links are xGMI
};

struct NetAttributes {
  std::string name;      // "mlx5_0", "eth0"
  int dev = -1;          // network device index (NCCL's net dev)
  double speedMbps = 0;  // as given by the XML/sysfs; bandwidth derived in link_bandwidth
  int port = 1;
  uint64_t guid = 0;
  int maxConn = 0;
  int latencyUs = 0;
  bool gdr = false;
  bool coll = false;
};

struct Node {
  NodeType type = NodeType::Cpu;
  int host = 0;         // which machine (0 for a single-node model; replicas for --nodes)
  CpuAttributes cpu;    // Cpu
  PciAttributes pci;    // Pci, Gpu, Nic (the PCI function), NvSwitch (first switch seen)
  GpuAttributes gpu;    // Gpu
  NetAttributes net;    // Net
  int nvSwitchCount = 0;  // NvSwitch: how many physical switches were folded into this node
  // Attributes the model does not interpret but the XML writer must give back, per element
  // name they came from ("pci", "gpu", "nic", "net", "cpu"): kept so dumps lose nothing.
  std::map<std::string, std::map<std::string, std::string>> extra;
  std::vector<Link> links;

  std::string label() const;  // "GPU/0", "CPU/1", "NET/mlx5_0", "PCI/0000:07:00.0"
};

class System {
 public:
  int addNode(Node node);  // returns its index
  // The node every NVSwitch of the machine folds into, named by the first switch's bus id
  // (callers create it once and count the switches in nvSwitchCount).
  int addNvSwitch(const std::string& busId);
  // Adds a link in each direction with the same type and bandwidth.
  void connect(int a, int b, LinkType type, double bandwidth);
  // Adds (or, when one of that type exists, widens by `bandwidth`) the directed link a -> b.
  void addLink(int from, int to, LinkType type, double bandwidth);

  const std::vector<Node>& nodes() const { return nodes_; }
  Node& node(int index) { return nodes_.at(static_cast<size_t>(index)); }
  const Node& node(int index) const { return nodes_.at(static_cast<size_t>(index)); }
  int size() const { return static_cast<int>(nodes_.size()); }

  // Node indices of one type, in insertion order (GPUs: the reader sorts them by `dev`).
  std::vector<int> nodesOfType(NodeType type) const;
  // -1 when absent.
  int findByBusId(const std::string& busId) const;
  int findGpuByDev(int dev, int host = 0) const;
  int findCpuByNuma(int numaId, int host = 0) const;
  // The PCI parent chain stops at a CPU: returns the CPU a node hangs under, or -1.
  int parentCpu(int index) const;
  // The canonical GPU order the reader and discovery both produce: the slots GPU nodes occupy
  // now, refilled by `dev` (stable), every link renumbered. Returns a copy.
  System withGpusInDevOrder() const;

  int version = 1;              // <system version="..."> (RCCL writes 2)
  std::string hostHash;         // <system host_hash=...> when given
  std::string source;           // where the model came from: a file name or "hwloc"

 private:
  std::vector<Node> nodes_;
};

// Structural equality for round-trip tests: same nodes in the same order with the same
// attributes and the same links. Returns "" when equal, else the first difference found.
std::string compareSystems(const System& a, const System& b);

}  // namespace loom::topology
