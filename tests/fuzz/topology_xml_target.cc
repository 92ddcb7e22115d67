// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the topology XML reader (LOOM_TOPO_FILE / NCCL_TOPO_FILE, and the graph file
// LOOM_GRAPH_FILE): topology/xml_document.h's parseXml, topology/topo_xml.h's
// parseTopologyXml and topology/graph_xml.h's parseGraphXml, all on the same input.
//
// Besides not crashing, what the readers accept must survive the round trips their headers
// promise: writeXml -> parseXml gives the same tree, writeTopologyXml -> parseTopologyXml an
// equal System (compareSystems), writeGraphXml -> parseGraphXml the same graphs.
#include <string>
#include <string_view>

#include "fuzz_targets.h"
#include "topology/graph_xml.h"
#include "topology/system.h"
#include "topology/topo_xml.h"
#include "topology/xml_document.h"

namespace loom::fuzz {

namespace {

using namespace loom::topology;

bool sameTree(const XmlElement& a, const XmlElement& b) {
  if (a.name != b.name || a.attributes != b.attributes || a.children.size() != b.children.size()) {
    return false;
  }
  for (size_t i = 0; i < a.children.size(); ++i) {
    if (!sameTree(a.children[i], b.children[i])) return false;
  }
  return true;
}

void xmlRoundTrip(const std::string& text) {
  XmlElement root;
  try {
    root = parseXml(text, "fuzz");
  } catch (const std::exception&) {
    return;
  }
  const std::string written = writeXml(root);
  XmlElement again;
  try {
    again = parseXml(written, "fuzz (written back)");
  } catch (const std::exception& error) {
    fail(std::string("writeXml produced XML that parseXml refuses: ") + error.what());
  }
  check(sameTree(root, again), "writeXml -> parseXml changed the document");
}

void topologyRoundTrip(const std::string& text) {
  System system;
  try {
    system = parseTopologyXml(text, "fuzz");
  } catch (const std::exception&) {
    return;
  }
  const std::string written = writeTopologyXml(system);
  System again;
  try {
    again = parseTopologyXml(written, "fuzz (written back)");
  } catch (const std::exception& error) {
    fail(std::string("writeTopologyXml produced a file parseTopologyXml refuses: ") + error.what());
  }
  const std::string difference = compareSystems(system, again);
  check(difference.empty(), "topology round trip differs: " + difference);
}

void graphRoundTrip(const std::string& text) {
  std::vector<Graph> graphs;
  try {
    graphs = parseGraphXml(text, "fuzz");
  } catch (const std::exception&) {
    return;
  }
  const std::string written = writeGraphXml(graphs);
  std::vector<Graph> again;
  try {
    again = parseGraphXml(written, "fuzz (written back)");
  } catch (const std::exception& error) {
    fail(std::string("writeGraphXml produced a file parseGraphXml refuses: ") + error.what());
  }
  check(writeGraphXml(again) == written, "graph round trip differs");
}

}  // namespace

void topologyXmlOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  xmlRoundTrip(text);
  topologyRoundTrip(text);
  graphRoundTrip(text);
}

}  // namespace loom::fuzz
