// SPDX-License-Identifier: Apache-2.0
// loom-topo end to end ($LOOM_TOPO_EXE on every topology in $LOOM_TEST_DATA/topo), plus the two
// pieces the tool helper owns inside the library: the double binary tree and NCCL graph XML.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "topology/graph_xml.h"
#include "topology/search.h"

namespace loom::test {
namespace {

namespace fs = std::filesystem;
using topology::Graph;

// The acceptance bound is 1 s per file; sanitizers slow the search several times over.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kSecondsPerFile = 5.0;
#else
constexpr double kSecondsPerFile = 1.0;
#endif

// ---- a minimal JSON reader: enough to prove the output parses and to look inside it --------

struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  double number = 0;
  bool boolean = false;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> members;

  const Json& at(const std::string& key) const {
    static const Json missing;
    const auto found = members.find(key);
    return found == members.end() ? missing : found->second;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : text_(text) {}

  // Throws std::runtime_error naming the offset on anything that is not one JSON value.
  Json parseDocument() {
    Json value = parseValue();
    skipSpace();
    if (pos_ != text_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::string(" \t\r\n").find(text_[pos_]) != std::string::npos)
      ++pos_;
  }
  char peek() {
    skipSpace();
    if (pos_ >= text_.size()) fail("unexpected end");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void literal(const std::string& word) {
    if (text_.compare(pos_, word.size(), word) != 0) fail("bad literal");
    pos_ += word.size();
  }
  std::string parseString() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      // Escapes are only checked for shape: the tool writes none but \" and \\ in practice.
      if (pos_ >= text_.size() ||
          std::string("\"\\/bfnrtu").find(text_[pos_]) == std::string::npos) {
        fail("bad escape");
      }
      out += text_[pos_++];
    }
  }
  Json parseValue() {
    Json value;
    const char c = peek();
    if (c == '{' || c == '[') {
      const bool isObject = c == '{';
      const char close = isObject ? '}' : ']';
      value.kind = isObject ? Json::Kind::Object : Json::Kind::Array;
      ++pos_;
      if (peek() == close) return ++pos_, value;
      do {
        if (isObject) {
          const std::string key = parseString();
          expect(':');
          if (value.members.count(key)) fail("duplicate key " + key);
          value.members[key] = parseValue();
        } else {
          value.items.push_back(parseValue());
        }
      } while (peek() == ',' && ++pos_);
      expect(close);
      return value;
    }
    if (c == '"') {
      value.kind = Json::Kind::String;
      value.text = parseString();
      return value;
    }
    if (c == 't' || c == 'f') {
      value.kind = Json::Kind::Bool;
      value.boolean = c == 't';
      literal(c == 't' ? "true" : "false");
      return value;
    }
    if (c == 'n') {
      literal("null");
      return value;
    }
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           std::string("+-0123456789.eE").find(text_[pos_]) != std::string::npos)
      ++pos_;
    if (start == pos_) fail("unexpected character");
    value.kind = Json::Kind::Number;
    size_t used = 0;
    value.number = std::stod(text_.substr(start, pos_ - start), &used);
    if (used != pos_ - start) fail("bad number");
    return value;
  }

  const std::string& text_;
  size_t pos_ = 0;
};

// ---- running the tool ---------------------------------------------------------------------

struct RunResult {
  int exitCode = -1;
  std::string out, err;
  double seconds = 0;
};

std::string readWhole(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "loom_topo_test.XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

const char* toolPath() {
  const char* exe = std::getenv("LOOM_TOPO_EXE");
  return exe ? exe : "";
}

// Runs loom-topo with `args` and the "NAME=value" entries of `env` set in its environment; the
// library's topology variables are cleared first so that the caller's shell cannot leak in.
RunResult runTool(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  TempDir scratch;
  const std::string outPath = scratch.file("out"), errPath = scratch.file("err");
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child == 0) {
    for (const char* name : {"LOOM_TOPO_FILE", "LOOM_GRAPH_FILE", "LOOM_GRAPH_DUMP_FILE",
                             "LOOM_TOPO_DUMP_FILE", "LOOM_P2P_LEVEL", "LOOM_NET_GDR_LEVEL"}) {
      unsetenv(name);
    }
    for (const std::string& entry : env) putenv(const_cast<char*>(entry.c_str()));
    const int out = open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
    std::vector<char*> argv{const_cast<char*>(toolPath())};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  RunResult result;
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child)
    throw std::runtime_error("fork/wait failed");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = readWhole(outPath);
  result.err = readWhole(errPath);
  return result;
}

std::string dataDir() {
  const char* dir = std::getenv("LOOM_TEST_DATA");
  return dir ? dir : "";
}

// Every topology file (not the *.graph.xml graph files) under topo/real and topo/synthetic.
std::vector<std::string> topologyFiles(const std::string& kind) {
  std::vector<std::string> files;
  const fs::path dir = fs::path(dataDir()) / "topo" / kind;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool isXml = name.size() > 4 && name.compare(name.size() - 4, 4, ".xml") == 0;
    const bool isGraph = name.find(".graph.") != std::string::npos;
    if (entry.is_regular_file() && isXml && !isGraph) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Json parseJson(const std::string& text) { return JsonParser(text).parseDocument(); }

std::vector<int> intList(const Json& array) {
  std::vector<int> values;
  for (const Json& item : array.items) values.push_back(static_cast<int>(item.number));
  return values;
}

class LoomTopoTool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(toolPath()).empty()) GTEST_SKIP() << "LOOM_TOPO_EXE not set";
  }
};

void checkGraphObject(const Json& graph, const std::string& what) {
  ASSERT_EQ(graph.kind, Json::Kind::Object) << what;
  for (const char* key :
       {"pattern", "nChannels", "bwPerChannel", "typeIntra", "typeInter", "channels"}) {
    EXPECT_NE(graph.at(key).kind, Json::Kind::Null) << what << " lacks " << key;
  }
  EXPECT_EQ(graph.at("channels").kind, Json::Kind::Array) << what;
  EXPECT_EQ(static_cast<size_t>(graph.at("nChannels").number), graph.at("channels").items.size())
      << what;
}

void checkJsonRun(const std::string& file) {
  const std::vector<std::string> args{"--file", file, "--json"};
  const RunResult first = runTool(args);
  ASSERT_EQ(first.exitCode, 0) << file << ": " << first.err;
  const RunResult second = runTool(args);
  ASSERT_EQ(second.exitCode, 0) << file << ": " << second.err;
  EXPECT_EQ(first.out, second.out) << file << ": two runs differ";
  // The faster of the two runs: the test machine is shared, the tool's own time is the point.
  EXPECT_LT(std::min(first.seconds, second.seconds), kSecondsPerFile) << file;
  Json root;
  ASSERT_NO_THROW(root = parseJson(first.out)) << file;
  ASSERT_EQ(root.kind, Json::Kind::Object) << file;
  EXPECT_EQ(root.members.size(), 4u) << file;
  for (const char* key : {"system", "paths", "ring", "tree"}) {
    EXPECT_EQ(root.at(key).kind, Json::Kind::Object) << file << " lacks " << key;
  }
  EXPECT_FALSE(root.at("system").at("nodes").items.empty()) << file;
  checkGraphObject(root.at("ring"), file + " ring");
  checkGraphObject(root.at("tree"), file + " tree");
}

TEST_F(LoomTopoTool, EveryRealTopologyAsJson) {
  const auto files = topologyFiles("real");
  ASSERT_FALSE(files.empty()) << "no topology files in " << dataDir() << "/topo/real";
  for (const std::string& file : files) checkJsonRun(file);
}

TEST_F(LoomTopoTool, EverySyntheticTopologyAsJson) {
  const auto files = topologyFiles("synthetic");
  ASSERT_FALSE(files.empty()) << "no topology files in " << dataDir() << "/topo/synthetic";
  for (const std::string& file : files) checkJsonRun(file);
}

// Any file with GPUs and NICs: with --nodes 2 every ring channel enters and leaves through a
// NET and the ranks cover both nodes.
TEST_F(LoomTopoTool, TwoNodesAddNetsToChannels) {
  int checked = 0;
  for (const std::string& file : topologyFiles("synthetic")) {
    const RunResult run = runTool({"--file", file, "--json", "--nodes", "2"});
    ASSERT_EQ(run.exitCode, 0) << file << ": " << run.err;
    const Json root = parseJson(run.out);
    const int gpus = static_cast<int>(root.at("ring").at("gpusPerNode").number);
    bool hasNet = false;
    for (const Json& node : root.at("system").at("nodes").items) {
      hasNet = hasNet || node.at("type").text == "NET";
    }
    if (gpus == 0 || !hasNet) continue;
    ++checked;
    const Json& ring = root.at("ring");
    ASSERT_FALSE(ring.at("channels").items.empty()) << file;
    for (size_t c = 0; c < ring.at("channels").items.size(); ++c) {
      EXPECT_GE(ring.at("netIn").items.at(c).number, 0) << file << " channel " << c;
      EXPECT_GE(ring.at("netOut").items.at(c).number, 0) << file << " channel " << c;
      std::vector<int> ranks = intList(ring.at("channels").items[c]);
      std::sort(ranks.begin(), ranks.end());
      ASSERT_EQ(ranks.size(), static_cast<size_t>(2 * gpus)) << file;
      for (int r = 0; r < 2 * gpus; ++r) EXPECT_EQ(ranks[static_cast<size_t>(r)], r) << file;
    }
    EXPECT_EQ(root.at("tree").at("doubleTree").kind, Json::Kind::Object) << file;
    const RunResult text = runTool({"--file", file, "--nodes", "2"});
    ASSERT_EQ(text.exitCode, 0) << file;
    EXPECT_NE(text.out.find("NET "), std::string::npos) << file;
  }
  EXPECT_GT(checked, 0) << "no synthetic file with GPUs and NICs";
}

TEST_F(LoomTopoTool, DotIsADigraph) {
  const auto files = topologyFiles("synthetic");
  ASSERT_FALSE(files.empty());
  TempDir scratch;
  const std::string dot = scratch.file("machine.dot");
  const RunResult run = runTool({"--file", files.front(), "--dot", dot});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const std::string text = readWhole(dot);
  EXPECT_EQ(text.rfind("digraph", 0), 0u) << text.substr(0, 200);
  EXPECT_EQ(std::count(text.begin(), text.end(), '{'), std::count(text.begin(), text.end(), '}'));
  EXPECT_NE(text.find("cluster_"), std::string::npos);
  EXPECT_NE(text.find("ring 0"), std::string::npos);
  // Graphviz is not a build dependency; when it is there, it must accept the file.
  if (access("/usr/bin/dot", X_OK) == 0) {
    const std::string command = "/usr/bin/dot -Tpng -o /dev/null '" + dot + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
}

TEST_F(LoomTopoTool, ThisHostHasACpu) {
  const RunResult text = runTool({});
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("CPU/"), std::string::npos) << text.out;
  const RunResult json = runTool({"--json"});
  ASSERT_EQ(json.exitCode, 0) << json.err;
  const Json root = parseJson(json.out);
  bool hasCpu = false;
  for (const Json& node : root.at("system").at("nodes").items)
    hasCpu |= node.at("type").text == "CPU";
  EXPECT_TRUE(hasCpu);
}

TEST_F(LoomTopoTool, HonoursLoomTopoFile) {
  const auto files = topologyFiles("synthetic");
  ASSERT_FALSE(files.empty());
  const RunResult fromEnv = runTool({"--json"}, {"LOOM_TOPO_FILE=" + files.front()});
  const RunResult fromFlag = runTool({"--json", "--file", files.front()});
  ASSERT_EQ(fromEnv.exitCode, 0) << fromEnv.err;
  EXPECT_EQ(fromEnv.out, fromFlag.out);
}

TEST_F(LoomTopoTool, BadFileExitsOneNamingIt) {
  TempDir scratch;
  const std::string missing = scratch.file("no-such-topology.xml");
  RunResult run = runTool({"--file", missing});
  EXPECT_EQ(run.exitCode, 1);
  EXPECT_NE(run.err.find(missing), std::string::npos) << run.err;
  const std::string broken = scratch.file("broken-topology.xml");
  std::ofstream(broken) << "<system version=\"1\"><cpu numaid=\"0\"><pci busid=";
  run = runTool({"--file", broken, "--json"});
  EXPECT_EQ(run.exitCode, 1);
  EXPECT_NE(run.err.find(broken), std::string::npos) << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out;
}

TEST_F(LoomTopoTool, BadUsageExitsTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--bogus"},
                                               {"--nodes", "0"},
                                               {"--nodes", "x"},
                                               {"--file"},
                                               {"--dot"}}) {
    const RunResult run = runTool(args);
    EXPECT_EQ(run.exitCode, 2) << args.front() << ": " << run.err;
    EXPECT_FALSE(run.err.empty());
  }
  const RunResult help = runTool({"--help"});
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("Usage: loom-topo"), std::string::npos);
}

// The ring and tree written with --graph-out come back unchanged through --graph.
TEST_F(LoomTopoTool, GraphFileRoundTripsThroughTheTool) {
  const auto files = topologyFiles("synthetic");
  ASSERT_FALSE(files.empty());
  TempDir scratch;
  const std::string graphFile = scratch.file("graph.xml");
  const RunResult searched = runTool({"--file", files.front(), "--json", "--graph-out", graphFile});
  ASSERT_EQ(searched.exitCode, 0) << searched.err;
  const RunResult loaded = runTool({"--file", files.front(), "--json", "--graph", graphFile});
  ASSERT_EQ(loaded.exitCode, 0) << loaded.err;
  // Same bytes, except that the graphs now say where they came from.
  std::string expected = searched.out;
  for (size_t at; (at = expected.find("\"fromFile\":false")) != std::string::npos;) {
    expected.replace(at, 16, "\"fromFile\":true");
  }
  EXPECT_EQ(loaded.out, expected);
}

// ---- NCCL graph XML ------------------------------------------------------------------------

std::vector<Graph> sampleGraphs() {
  Graph ring;
  ring.id = 0;
  ring.pattern = topology::Pattern::Ring;
  ring.crossNic = true;
  ring.bwIntra = 24.5;
  ring.bwInter = 12;
  ring.typeIntra = topology::PathType::Nvl;
  ring.typeInter = topology::PathType::Pxn;
  ring.channels = {{{0, 1, 2, 3}, 0, 1}, {{3, 2, 1, 0}, 1, 0}};
  ring.nChannels = 2;
  Graph tree = ring;
  tree.id = 1;
  tree.pattern = topology::Pattern::BalancedTree;
  tree.crossNic = false;
  tree.sameChannels = true;
  tree.typeInter = topology::PathType::Sys;
  tree.channels = {{{1, 0}, -1, -1}};
  tree.nChannels = 1;
  return {ring, tree};
}

// Everything a graph file holds is in its text, so equal texts mean equal graphs.
void expectSameGraphs(const std::vector<Graph>& a, const std::vector<Graph>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t g = 0; g < a.size(); ++g) EXPECT_EQ(a[g].nChannels, b[g].nChannels) << g;
  EXPECT_EQ(topology::writeGraphXml(a), topology::writeGraphXml(b));
}

TEST(GraphXml, RoundTrips) {
  const std::vector<Graph> graphs = sampleGraphs();
  const std::string text = topology::writeGraphXml(graphs);
  const std::vector<Graph> back = topology::parseGraphXml(text, "sample");
  expectSameGraphs(graphs, back);
  EXPECT_EQ(back[0].channels[1].netIn, 1);
  EXPECT_EQ(back[0].channels[1].netOut, 0);
  EXPECT_EQ(back[0].typeInter, topology::PathType::Pxn);
  EXPECT_TRUE(back[0].crossNic && back[1].sameChannels);
  EXPECT_DOUBLE_EQ(back[0].bwIntra, 24.5);
  EXPECT_NE(text.find("<net dev=\"1\"/>"), std::string::npos) << text;
  EXPECT_NE(text.find("speedintra=\"24.5\""), std::string::npos) << text;
}

TEST(GraphXml, FileRoundTrips) {
  TempDir scratch;
  const std::string path = scratch.file("graphs.xml");
  topology::writeGraphFile(sampleGraphs(), path);
  expectSameGraphs(sampleGraphs(), topology::readGraphFile(path));
}

TEST(GraphXml, ReadsTheAzureNcv4VendorFile) {
  const fs::path file = fs::path(dataDir()) / "topo" / "real" / "azure-ncv4-a100x4-pcie.graph.xml";
  if (!fs::exists(file)) GTEST_SKIP() << file << " not present";
  const std::vector<Graph> graphs = topology::readGraphFile(file.string());
  ASSERT_EQ(graphs.size(), 3u);
  EXPECT_EQ(graphs[0].pattern, topology::Pattern::Ring);
  EXPECT_EQ(graphs[0].nChannels, 2);
  EXPECT_EQ(graphs[0].channels[1].gpus, (std::vector<int>{0, 3, 2, 1}));
  EXPECT_EQ(graphs[0].channels[0].netIn, -1);
  EXPECT_DOUBLE_EQ(graphs[0].bwIntra, 12);
  EXPECT_EQ(graphs[0].typeIntra, topology::PathType::Sys);
  EXPECT_EQ(graphs[0].typeInter, topology::PathType::Pix);
  EXPECT_EQ(graphs[1].pattern, topology::Pattern::BalancedTree);
  EXPECT_EQ(graphs[2].pattern, topology::Pattern::Tree);
  EXPECT_EQ(graphs[2].id, 2);
  EXPECT_EQ(graphs[2].nChannels, 4);
  // Written back and read again, nothing changes.
  expectSameGraphs(graphs, topology::parseGraphXml(topology::writeGraphXml(graphs), "again"));
}

// Every file in the shared collection must work with --file, the vendor graph file too: it is
// shown on its own (rings and trees from the file, no machine).
TEST_F(LoomTopoTool, AGraphFileAsFileShowsItsRingsAndTrees) {
  const fs::path file = fs::path(dataDir()) / "topo" / "real" / "azure-ncv4-a100x4-pcie.graph.xml";
  if (!fs::exists(file)) GTEST_SKIP() << file << " not present";
  const RunResult run = runTool({"--file", file.string(), "--json"});
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const Json root = parseJson(run.out);
  EXPECT_TRUE(root.at("system").at("nodes").items.empty());
  EXPECT_EQ(intList(root.at("ring").at("channels").items[1]), (std::vector<int>{0, 3, 2, 1}));
  EXPECT_EQ(root.at("ring").at("nChannels").number, 2);
  EXPECT_EQ(root.at("tree").at("pattern").text, "BALANCED_TREE");
}

TEST(GraphXml, RejectsMalformedInput) {
  auto graph = [](const std::string& attributes, const std::string& body) {
    return "<graphs><graph id=\"0\" " + attributes + ">" + body + "</graph></graphs>";
  };
  const std::string gpu0 = "<channel><gpu dev=\"0\"/></channel>";
  const std::string bad[] = {
      "",
      "<graphs version=\"1\"><graph id=\"0\" pattern=\"4\"",
      graph("pattern=\"9\"", gpu0),
      graph("pattern=\"4\"", "<channel></channel>"),
      graph("pattern=\"4\" nchannels=\"2\"", gpu0),
      graph("pattern=\"4\" typeintra=\"WARP\"", gpu0),
      graph("pattern=\"4\"", "<channel><gpu dev=\"x\"/></channel>"),
      graph("pattern=\"4\"", "<channel><gpu dev=\"0\"/><net dev=\"0\"/><gpu dev=\"1\"/></channel>"),
      "<system version=\"1\"></system>",
  };
  for (const std::string& text : bad) {
    try {
      topology::parseGraphXml(text, "bad-graph.xml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const loom::Error& error) {
      EXPECT_EQ(error.code(), loomInvalidArgument);
      EXPECT_NE(std::string(error.what()).find("bad-graph.xml"), std::string::npos) << error.what();
    }
  }
  EXPECT_THROW(topology::readGraphFile("/nonexistent/graph.xml"), loom::Error);
}

}  // namespace
}  // namespace loom::test
