// SPDX-License-Identifier: Apache-2.0
// loom-topo: the machine as Loom's topology engine sees it (this host, or an NCCL topology
// XML), the paths between its GPUs, NICs and CPUs, and the rings and trees the search picks.
// Text for people, --json for scripts, --dot for a picture.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "base/error.h"
#include "base/version.h"
#include "tools/loom_topo.h"

namespace {

constexpr int kExitLoadError = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "Usage: loom-topo [--file TOPO.xml] [--nodes N] [--json] [--dot FILE]\n"
    "                 [--graph GRAPH.xml] [--graph-out FILE] [--help] [--version]\n"
    "\n"
    "Shows the machine as Loom's topology engine sees it: the system tree (CPUs, PCI\n"
    "switches, GPUs, NICs, network ports, with link types and GB/s), the path matrix\n"
    "between GPUs, NICs and CPUs (like `nvidia-smi topo -m`), and the rings and trees\n"
    "the graph search picks, with bandwidth per channel and each channel's order.\n"
    "\n"
    "  --file FILE       read an NCCL/RCCL topology XML instead of discovering this host\n"
    "                    (default: $LOOM_TOPO_FILE when set)\n"
    "  --nodes N         rings and trees for a job over N identical nodes (default 1):\n"
    "                    channels then enter and leave each node through a NIC\n"
    "  --json            print one JSON object {system, paths, ring, tree} instead of text\n"
    "  --dot FILE        also write a Graphviz digraph of the machine with the first rings\n"
    "                    drawn on it (`dot -Tpng FILE -o topo.png`); '-': only the digraph,\n"
    "                    on stdout\n"
    "  --graph FILE      take rings and trees from an NCCL graph XML instead of searching\n"
    "  --graph-out FILE  write the rings and trees as NCCL graph XML\n"
    "  -h, --help        this text\n"
    "  --version         print loom-topo's version (Loom's) and exit\n"
    "\n"
    "Environment: LOOM_TOPO_FILE, LOOM_P2P_LEVEL, LOOM_NET_GDR_LEVEL, LOOM_GRAPH_FILE,\n"
    "LOOM_GRAPH_DUMP_FILE, LOOM_TOPO_DUMP_FILE (as for the library).\n"
    "Exit status: 0 ok, 1 the topology or graph could not be loaded, 2 bad usage.\n";

struct Options {
  loom::topology::TopologyRequest request;
  bool json = false;
  std::string dotFile;
};

[[noreturn]] void usageError(const std::string& message) {
  std::cerr << "loom-topo: " << message << "\n(run loom-topo --help for usage)\n";
  std::exit(kExitUsage);
}

int parseNodes(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 || value > 65536) {
    usageError("--nodes wants a whole number from 1 to 65536, got '" + text + "'");
  }
  return static_cast<int>(value);
}

Options parseOptions(int argc, char** argv) {
  // Before the environment or any other argument is read: --version answers whatever else is
  // given.
  loom::exitOnVersionFlag(argc, argv, "loom-topo");
  Options options;
  // The library's variables first, so that the command line overrides them.
  options.request = loom::topology::TopologyRequest::fromEnvironment();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool hasInlineValue = false;
    if (const size_t equals = arg.find('=');
        arg.rfind("--", 0) == 0 && equals != std::string::npos) {
      value = arg.substr(equals + 1);
      arg = arg.substr(0, equals);
      hasInlineValue = true;
    }
    auto takeValue = [&]() -> std::string {
      if (hasInlineValue) return value;
      if (i + 1 >= argc) usageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "--file") {
      options.request.topoFile = takeValue();
      if (options.request.topoFile.empty()) usageError("--file needs a file name");
    } else if (arg == "--nodes") {
      options.request.nodes = parseNodes(takeValue());
    } else if (arg == "--json") {
      options.json = true;
    } else if (arg == "--dot") {
      options.dotFile = takeValue();
      if (options.dotFile.empty()) usageError("--dot needs a file name");
    } else if (arg == "--graph") {
      options.request.graphFile = takeValue();
    } else if (arg == "--graph-out") {
      options.request.graphDumpFile = takeValue();
    } else {
      usageError("unknown argument '" + std::string(argv[i]) + "'");
    }
    if (hasInlineValue && (arg == "--json" || arg == "-h" || arg == "--help")) {
      usageError(arg + " takes no value");
    }
  }
  return options;
}

// Engine errors normally name the file already; make sure the message always does.
std::string loadErrorMessage(const std::string& what, const Options& options) {
  const std::string& file = options.request.topoFile;
  const std::string& graph = options.request.graphFile;
  const auto names = [&](const std::string& name) {
    return !name.empty() && what.find(name) != std::string::npos;
  };
  if (file.empty() || names(file) || names(graph)) return what;
  return "'" + file + "': " + what;
}

void writeDotFile(const Options& options, const loom::tools::TopoView& view) {
  if (options.dotFile == "-") {
    loom::tools::writeDot(std::cout, view);
    return;
  }
  std::ofstream file(options.dotFile, std::ios::trunc);
  if (file) loom::tools::writeDot(file, view);
  file.flush();
  if (!file) loom::throwSystem("cannot write dot file '" + options.dotFile + "'");
}

}  // namespace

// An NCCL graph file (root <graphs>) given as --file: shown on its own, with no machine.
bool isGraphFile(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The first element, skipping the declaration and comments.
  size_t at = 0;
  while ((at = text.find('<', at)) != std::string::npos) {
    if (text.compare(at, 4, "<!--") == 0) {
      at = text.find("-->", at);
      if (at == std::string::npos) return false;
    } else if (text.compare(at, 2, "<?") == 0) {
      ++at;
    } else {
      return text.compare(at, 7, "<graphs") == 0;
    }
  }
  return false;
}

std::unique_ptr<loom::topology::TopologyResult> analyze(const Options& options) {
  if (!options.request.topoFile.empty() && isGraphFile(options.request.topoFile)) {
    loom::topology::TopologyRequest request = options.request;
    request.graphFile = request.topoFile;
    request.topoFile.clear();
    loom::topology::System none;
    none.source = options.request.topoFile + " (an NCCL graph file: rings and trees, no machine)";
    return loom::topology::analyzeSystem(std::move(none), request);
  }
  return loom::topology::analyzeTopology(options.request);
}

int main(int argc, char** argv) {
  const Options options = parseOptions(argc, argv);
  std::unique_ptr<loom::topology::TopologyResult> result;
  try {
    result = analyze(options);
  } catch (const std::exception& error) {
    std::cerr << "loom-topo: cannot load topology: " << loadErrorMessage(error.what(), options)
              << "\n";
    return kExitLoadError;
  }
  const loom::tools::TopoView view{*result, options.request.nodes, loom::tools::gpusPerNode(*result)};
  try {
    if (options.dotFile == "-") {
      // The picture owns stdout; a report would corrupt it.
    } else if (options.json) {
      loom::tools::writeJson(std::cout, view);
    } else {
      loom::tools::printReport(std::cout, view);
    }
    if (!options.dotFile.empty()) writeDotFile(options, view);
  } catch (const std::exception& error) {
    std::cerr << "loom-topo: " << error.what() << "\n";
    return kExitLoadError;
  }
  std::cout.flush();
  return std::cout ? 0 : kExitLoadError;
}
