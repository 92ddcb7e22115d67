// SPDX-License-Identifier: Apache-2.0
// NCCL/RCCL system topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE; Loom: LOOM_TOPO_FILE /
// LOOM_TOPO_DUMP_FILE) to and from the machine model.
//
// Reading (topo_xml_reader.cc) follows what NCCL makes of a file:
// - one CPU node per <cpu>; every pair of CPUs is joined by InterSocket links whose bandwidth
//   in each direction depends on the sending CPU's vendor/model (link_bandwidth.h);
// - a <pci> holding a <gpu> becomes a GPU node, one holding a <nic> a NIC node (with one NET
//   node per <net>); otherwise a <pci> with child <pci> or a bridge class (0x0604xx) is a PCI
//   switch; otherwise the class decides: 0x03xxxx (display/3D) and 0x12xxxx (AMD Instinct,
//   "processing accelerator") are GPUs, 0x02xxxx are NICs; anything else, including a leaf
//   <pci> with no class at all (AWS p5/g5 files list GPUs and NICs that way), stays a PCI node:
//   the file does not say what it is, and guessing would invent GPUs (the p5 file would show
//   32 of them). Every PCI node links to its parent with PCIe bandwidth from its own
//   link_speed x link_width (width 0 or missing: x16, as NCCL);
// - GPUs without a <gpu dev=...> get the lowest unused device numbers in document order; GPU
//   nodes are then ordered by dev (stable): the i-th GPU slot holds the i-th lowest dev;
// - <nvlink>/<xgmi> to another GPU: an NvLink link of count x per-link bandwidth; to an
//   NVSwitch (tclass 0x0680xx, or a bus id of a non-GPU node of the file): a link in both
//   directions to the machine's single NvSwitch node, which folds every switch bus id seen;
//   to the GPU itself, or to a GPU bus id that is not in the file (or an unknown bus id with no
//   switch class): ignored with a WARN;
// - <c2c count bw>: C2C links between the GPU and its CPU (count x bw MB/s; the attributes are
//   kept in the GPU's extra["c2c"] so the dump writes them back as given); <pcilink target>: a Loc
//   link between two PCI nodes (NCCL's PCI P2P bridge);
// - unknown attributes of system-level elements are kept in Node::extra for the writer;
//   unknown elements are skipped with a WARN. Malformed XML, a <system> missing, a <pci>
//   without busid, duplicate bus ids or non-numeric numbers throw
//   loom::Error(loomInvalidArgument) naming the file and line.
//
// Writing (topo_xml_writer.cc) gives back NCCL's format for machine 0 of the model
// (<system version=...> with its cpu/pci/gpu/nic/net tree; NVSwitch links as <nvlink
// target=<switch bus id> tclass="0x068000">, a GPU's links spread evenly over the switches
// folded into the NvSwitch node), such that reading it back yields an equal System
// (compareSystems(...) == "").
#pragma once

#include <string>

#include "topology/system.h"
#include "topology/xml_document.h"

namespace loom::topology {

System parseTopologyXml(const std::string& text, const std::string& sourceName);
System readTopologyFile(const std::string& path);  // throws loomSystemError if unreadable
std::string writeTopologyXml(const System& system);
// Atomic: writes "<path>.tmp.<pid>" and renames it over `path`.
void writeTopologyFile(const System& system, const std::string& path);

// The model from an already parsed document (the root must be <system>).
System topologyFromXml(const XmlElement& root, const std::string& sourceName);
// The document writeTopologyXml prints.
XmlElement topologyToXml(const System& system);

// Node::extra key and attribute under which the NvSwitch node keeps the bus ids of the
// switches folded into it (comma separated, first seen first).
inline constexpr const char* kNvSwitchExtraElement = "nvswitch";
inline constexpr const char* kNvSwitchExtraBusIds = "busids";
// Node::extra mark of a Net node the reader added for a NIC the file lists without <net>
// (partial files; see inferMissingNets in topo_xml_reader.cc). The writer leaves such nets out.
inline constexpr const char* kInferredNetElement = "net";
inline constexpr const char* kInferredNetAttribute = "inferred";

}  // namespace loom::topology
