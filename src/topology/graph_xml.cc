// SPDX-License-Identifier: Apache-2.0
// NCCL graph XML in and out (format in graph_xml.h). The reader is lenient where NCCL files
// vary (optional attributes missing, numbers written as "12" or "12.0", path types by name or
// number, attributes it does not know such as latencyinter) and strict where a wrong value
// would silently change a ring (unknown pattern, a channel without GPUs, a net between GPUs,
// an nchannels that disagrees with the channels listed).
#include "topology/graph_xml.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "base/error.h"
#include "topology/bounded_file.h"
#include "topology/xml_document.h"

namespace loom::topology {
namespace {

constexpr Pattern kPatterns[] = {Pattern::Ring, Pattern::Tree, Pattern::SplitTree,
                                 Pattern::BalancedTree};


XmlElement channelElement(const Channel& channel) {
  XmlElement element;
  element.name = "channel";
  auto add = [&](const char* name, int dev) {
    element.addChild(name).setAttribute("dev", std::to_string(dev));
  };
  if (channel.netIn >= 0) add("net", channel.netIn);
  for (int gpu : channel.gpus) add("gpu", gpu);
  if (channel.netOut >= 0) add("net", channel.netOut);
  return element;
}

// Reading: every error names the file and the line of the element at fault.
class GraphReader {
 public:
  explicit GraphReader(const std::string& sourceName) : source_(sourceName) {}

  std::vector<Graph> read(const XmlElement& root) const {
    if (root.name != "graphs")
      fail(root, "expected <graphs> as the root element, found <" + root.name + ">");
    std::vector<Graph> graphs;
    for (const XmlElement& child : root.children) {
      if (child.name == "graph")
        graphs.push_back(readGraph(child, static_cast<int>(graphs.size())));
    }
    return graphs;
  }

 private:
  [[noreturn]] void fail(const XmlElement& element, const std::string& what) const {
    throwArgument(source_ + ":" + std::to_string(element.line) + ": " + what);
  }

  int integer(const XmlElement& element, const char* name, int fallback) const {
    const std::string* text = element.attribute(name);
    if (!text) return fallback;
    int value = 0;
    const char* end = text->data() + text->size();
    const auto [stop, error] = std::from_chars(text->data(), end, value);
    if (text->empty() || error != std::errc() || stop != end) {
      fail(element, std::string("attribute ") + name + "=\"" + *text + "\" is not an integer");
    }
    return value;
  }

  double number(const XmlElement& element, const char* name, double fallback) const {
    const std::string* text = element.attribute(name);
    if (!text) return fallback;
    char* stop = nullptr;
    errno = 0;
    const double value = std::strtod(text->c_str(), &stop);
    if (text->empty() || *stop != '\0' || errno != 0 || value < 0) {
      fail(element, std::string("attribute ") + name + "=\"" + *text + "\" is not a bandwidth");
    }
    return value;
  }

  PathType pathType(const XmlElement& element, const char* name) const {
    const std::string* text = element.attribute(name);
    if (!text) return PathType::Loc;
    const std::optional<PathType> type = parsePathType(*text);
    if (!type)
      fail(element, std::string("attribute ") + name + "=\"" + *text + "\" is not a path type");
    return *type;
  }

  Pattern pattern(const XmlElement& element) const {
    if (!element.hasAttribute("pattern")) fail(element, "<graph> has no pattern attribute");
    const int id = integer(element, "pattern", 0);
    for (Pattern candidate : kPatterns) {
      if (patternNcclId(candidate) == id) return candidate;
    }
    fail(element, "unknown graph pattern " + std::to_string(id));
  }

  // <net/> before the first <gpu/> is where the channel enters the node, after the last one
  // where it leaves; NCCL writes nothing else.
  Channel readChannel(const XmlElement& element) const {
    Channel channel;
    for (const XmlElement& child : element.children) {
      if (child.name != "gpu" && child.name != "net") continue;
      if (!child.hasAttribute("dev")) fail(child, "<" + child.name + "> has no dev attribute");
      const int dev = integer(child, "dev", -1);
      if (dev < 0) fail(child, "negative dev " + std::to_string(dev));
      if (child.name == "gpu") {
        if (channel.netOut >= 0) fail(child, "<gpu> after the channel's outgoing <net>");
        channel.gpus.push_back(dev);
      } else if (channel.gpus.empty() && channel.netIn < 0) {
        channel.netIn = dev;
      } else if (!channel.gpus.empty() && channel.netOut < 0) {
        channel.netOut = dev;
      } else {
        fail(child, "a channel has at most one <net> before and one after its GPUs");
      }
    }
    if (channel.gpus.empty()) fail(element, "<channel> lists no <gpu>");
    return channel;
  }

  Graph readGraph(const XmlElement& element, int position) const {
    Graph graph;
    graph.id = integer(element, "id", position);
    graph.pattern = pattern(element);
    graph.crossNic = integer(element, "crossnic", 0) != 0;
    graph.bwIntra = number(element, "speedintra", 0);
    graph.bwInter = number(element, "speedinter", graph.bwIntra);
    graph.typeIntra = pathType(element, "typeintra");
    graph.typeInter = pathType(element, "typeinter");
    graph.sameChannels = integer(element, "samechannels", 0) != 0;
    for (const XmlElement& child : element.children) {
      if (child.name == "channel") graph.channels.push_back(readChannel(child));
    }
    graph.nChannels = static_cast<int>(graph.channels.size());
    const int declared = integer(element, "nchannels", graph.nChannels);
    if (declared != graph.nChannels) {
      fail(element, "nchannels=\"" + std::to_string(declared) + "\" but " +
                        std::to_string(graph.nChannels) + " <channel> elements");
    }
    return graph;
  }

  std::string source_;
};

}  // namespace

// GB/s with at most three decimals and no trailing zeros ("12", "24.5"), like NCCL's dumps.
std::string formatSpeed(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", value);
  std::string out = text;
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out == "-0" ? "0" : out;
}

std::string writeGraphXml(const std::vector<Graph>& graphs) {
  XmlElement root;
  root.name = "graphs";
  root.setAttribute("version", "1");
  for (const Graph& graph : graphs) {
    XmlElement& element = root.addChild("graph");
    element.setAttribute("id", std::to_string(graph.id));
    element.setAttribute("pattern", std::to_string(patternNcclId(graph.pattern)));
    element.setAttribute("crossnic", graph.crossNic ? "1" : "0");
    element.setAttribute("nchannels", std::to_string(graph.channels.size()));
    element.setAttribute("speedintra", formatSpeed(graph.bwIntra));
    element.setAttribute("speedinter", formatSpeed(graph.bwInter));
    element.setAttribute("latencyinter", "0");  // Loom does not model it; NCCL writes 0 too
    element.setAttribute("typeintra", pathTypeName(graph.typeIntra));
    element.setAttribute("typeinter", pathTypeName(graph.typeInter));
    element.setAttribute("samechannels", graph.sameChannels ? "1" : "0");
    for (const Channel& channel : graph.channels)
      element.children.push_back(channelElement(channel));
  }
  return writeXml(root);
}

std::vector<Graph> parseGraphXml(const std::string& text, const std::string& sourceName) {
  return GraphReader(sourceName).read(parseXml(text, sourceName));
}

std::vector<Graph> readGraphFile(const std::string& path) {
  return parseGraphXml(readBoundedFile(path, "graph file", kMaxXmlBytes), path);
}

void writeGraphFile(const std::vector<Graph>& graphs, const std::string& path) {
  const std::string text = writeGraphXml(graphs);
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throwSystem("cannot write graph file '" + temporary + "'");
    file << text;
    file.flush();
    if (!file) throwSystem("cannot write graph file '" + temporary + "'");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temporary.c_str());
    throwSystem("cannot rename '" + temporary + "' to '" + path + "'", err);
  }
}

}  // namespace loom::topology
