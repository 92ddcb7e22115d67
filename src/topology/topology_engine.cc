// SPDX-License-Identifier: Apache-2.0
#include "topology/topology_engine.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "topology/discover.h"
#include "topology/graph_xml.h"
#include "topology/topo_xml.h"

namespace loom::topology {

TopologyRequest TopologyRequest::fromEnvironment() {
  using config::Knob;
  TopologyRequest request;
  request.topoFile = config::text(Knob::TopoFile);
  request.topoDumpFile = config::text(Knob::TopoDumpFile);
  request.graphFile = config::text(Knob::GraphFile);
  request.graphDumpFile = config::text(Knob::GraphDumpFile);
  request.policy = PathPolicy::fromEnvironment();
  return request;
}

std::unique_ptr<TopologyResult> analyzeTopology(const TopologyRequest& request) {
  System system = request.topoFile.empty() ? discoverHost() : readTopologyFile(request.topoFile);
  return analyzeSystem(std::move(system), request);
}

std::unique_ptr<TopologyResult> analyzeSystem(System system, const TopologyRequest& request) {
  auto result = std::make_unique<TopologyResult>();
  result->system = std::move(system);
  if (!request.topoDumpFile.empty()) {
    writeTopologyFile(result->system, request.topoDumpFile);
    LOOM_INFO(GRAPH, "topology written to %s", request.topoDumpFile.c_str());
  }
  result->paths = PathTable(result->system, request.policy);

  if (!request.graphFile.empty()) {
    // A graph file replaces the search, as NCCL_GRAPH_FILE does: id 0 is the ring, 1 the tree.
    for (Graph& graph : readGraphFile(request.graphFile)) {
      if (graph.id == 0) result->ring = std::move(graph);
      if (graph.id == 1) result->tree = std::move(graph);
    }
    result->graphsFromFile = true;
    LOOM_INFO(GRAPH, "rings and trees read from %s", request.graphFile.c_str());
  } else {
    SearchOptions options;
    options.nodes = request.nodes;
    result->ring = searchRings(result->system, result->paths, options);
    result->tree = searchTrees(result->system, result->paths, options);
  }
  if (!request.graphDumpFile.empty()) {
    std::string text = writeGraphXml({result->ring, result->tree});
    const std::string temporary = request.graphDumpFile + ".tmp";
    std::FILE* file = std::fopen(temporary.c_str(), "w");
    const bool written = file != nullptr && std::fwrite(text.data(), 1, text.size(), file) == text.size();
    const bool closed = file != nullptr && std::fclose(file) == 0;
    if (!written || !closed || std::rename(temporary.c_str(), request.graphDumpFile.c_str()) != 0) {
      throwSystem("LOOM_GRAPH_DUMP_FILE: writing " + request.graphDumpFile);
    }
    LOOM_INFO(GRAPH, "rings and trees written to %s", request.graphDumpFile.c_str());
  }
  return result;
}

std::string describeGraph(const Graph& graph, int maxChannels) {
  char head[160];
  std::snprintf(head, sizeof(head), "%s: %d channel%s x %.1f GB/s (inter %.1f), %s/%s", patternName(graph.pattern),
                graph.nChannels, graph.nChannels == 1 ? "" : "s", graph.bwIntra, graph.bwInter,
                pathTypeName(graph.typeIntra), pathTypeName(graph.typeInter));
  std::string text = head;
  const int shown = std::min<int>(maxChannels, static_cast<int>(graph.channels.size()));
  for (int c = 0; c < shown; ++c) {
    const Channel& channel = graph.channels[static_cast<size_t>(c)];
    text += "; ch" + std::to_string(c);
    if (channel.netIn >= 0) text += " NET/" + std::to_string(channel.netIn);
    for (int gpu : channel.gpus) text += " " + std::to_string(gpu);
    if (channel.netOut >= 0) text += " NET/" + std::to_string(channel.netOut);
  }
  if (shown < static_cast<int>(graph.channels.size())) text += "; ...";
  return text;
}

}  // namespace loom::topology
