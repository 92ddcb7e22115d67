// SPDX-License-Identifier: Apache-2.0
#include "core/settings.h"

#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/registry/registry.h"

namespace loom {

namespace {

std::string lowered(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));  // NCCL says "Socket"
  return text;
}

// The registry name LOOM_TRANSPORT asks for; "" for auto.
std::string parseTransport(const std::string& choice) {
  const std::string text = lowered(choice);
  if (text.empty() || text == "auto") return "";
  if (text == "tcp") return "socket";
  return text;  // the registry's choices are its names: shm, socket
}

// The network transport `text` names (LOOM_NET, NCCL_NET, config.netName), as the registry
// spells it; "" stays "" (the registry's first). nullopt, with what is wrong in *why, for an
// unknown name, which fails init rather than warning: a job that asked for a network it cannot
// have would otherwise run, slowly, on another.
std::optional<std::string> parseNetTransport(const std::string& text, std::string* why) {
  if (text.empty()) return "";
  const std::vector<std::string> known = transport::registeredTransports().networkTransports();
  const std::string name = lowered(text);
  for (const std::string& candidate : known) {
    if (lowered(candidate) == name) return candidate;
  }
  std::string list;
  for (const std::string& candidate : known) list += (list.empty() ? "" : ", ") + candidate;
  *why = "unknown network transport; known: " + list;
  return std::nullopt;
}

bool isSet(int value) { return value != LOOM_CONFIG_UNDEF_INT; }

// The environment's part; the registry checks each value (and its range) as it reads it.
CommSettings fromEnvironment() {
  using config::Knob;
  CommSettings settings;
  settings.timeoutMs = static_cast<int>(config::integer(Knob::TimeoutMs));
  settings.transport = parseTransport(config::choice(Knob::Transport));
  const std::string net = config::text(Knob::Net);
  std::string why;
  const std::optional<std::string> netTransport = parseNetTransport(net, &why);
  if (!netTransport) config::badValue(Knob::Net, net, why);
  settings.netTransport = *netTransport;
  settings.shmDisabled = config::flag(Knob::ShmDisable);
  settings.socketsPerPeer = static_cast<int>(config::integer(Knob::SocketNsocks));
  settings.pieceBytes = static_cast<size_t>(config::integer(Knob::PieceBytes));
  settings.deviceCopyBytes = static_cast<size_t>(config::integer(Knob::DeviceCopyBytes));
  settings.shmSlotBytes = static_cast<size_t>(config::integer(Knob::ShmSlotBytes));
  settings.shmSlotBytes = (settings.shmSlotBytes + 63) / 64 * 64;
  settings.shmSlots = static_cast<int>(config::integer(Knob::ShmSlots));
  settings.spreadRanks = config::flag(Knob::SpreadRanks);
  settings.algorithm = algo::algorithmSetting(config::choice(Knob::Algo));
  settings.directDisabled = settings.algorithm == algo::AlgorithmSetting::Ring;
  settings.directEagerBytes = static_cast<size_t>(config::integer(Knob::DirectEagerBytes));
  settings.directEagerBytes = (settings.directEagerBytes + 63) / 64 * 64;
  settings.directChunkBytes = static_cast<size_t>(config::integer(Knob::DirectChunkBytes));
  settings.crossMemoryEnabled = config::flag(Knob::Cma);
  settings.streamCopyBytes = static_cast<size_t>(config::integer(Knob::StreamCopyBytes));
  settings.streamReduceBytes = static_cast<size_t>(config::integer(Knob::StreamReduceBytes));
  settings.checkLevel = static_cast<int>(config::integer(Knob::Check));
  settings.deterministic = config::flag(Knob::Deterministic);
  return settings;
}

CommSettings merged(const loomConfig_t* config) {
  CommSettings settings = fromEnvironment();
  if (config == nullptr) return settings;
  // The first three fields tell us which layout the caller compiled against.
  if (config->magic != LOOM_CONFIG_MAGIC) {
    throwArgument("loomConfig_t has a wrong magic number: initialise it with LOOM_CONFIG_INITIALIZER");
  }
  if (config->size < offsetof(loomConfig_t, timeoutMs) || config->size > sizeof(loomConfig_t)) {
    throwArgument("loomConfig_t has an unexpected size " + std::to_string(config->size) +
                  ": initialise it with LOOM_CONFIG_INITIALIZER");
  }
  if (isSet(config->blocking)) {
    if (config->blocking != 0 && config->blocking != 1) throwArgument("config.blocking must be 0 or 1");
    settings.blocking = config->blocking == 1;
  }
  if (config->commName != nullptr) settings.commName = config->commName;
  if (config->netName != nullptr) {
    std::string why;
    const std::optional<std::string> netTransport = parseNetTransport(config->netName, &why);
    if (!netTransport) throwArgument(std::string("config.netName=\"") + config->netName + "\": " + why);
    settings.netTransport = *netTransport;
  }
  if (isSet(config->nChannelsPerNetPeer)) {
    if (config->nChannelsPerNetPeer < 1 || config->nChannelsPerNetPeer > 16) {
      throwArgument("config.nChannelsPerNetPeer must be in [1, 16]");
    }
    settings.socketsPerPeer = config->nChannelsPerNetPeer;
  }
  if (config->size >= offsetof(loomConfig_t, timeoutMs) + sizeof(int) && isSet(config->timeoutMs)) {
    if (config->timeoutMs <= 0) throwArgument("config.timeoutMs must be > 0");
    settings.timeoutMs = config->timeoutMs;
  }
  // A layout older than the deterministic field leaves it to LOOM_DETERMINISTIC.
  if (config->size >= offsetof(loomConfig_t, deterministic) + sizeof(int) && isSet(config->deterministic)) {
    if (config->deterministic != 0 && config->deterministic != 1) throwArgument("config.deterministic must be 0 or 1");
    settings.deterministic = config->deterministic == 1;
  }
  return settings;
}

// Which network a job's hosts talk over, and who chose it: with NCCL_NET honoured, an NCCL
// environment may choose it without the user thinking of Loom.
void logNetTransport(const CommSettings& settings, const loomConfig_t* config) {
  if (!log::enabled(log::Level::Info, log::NET)) return;
  std::string name = settings.netTransport;
  if (name.empty()) {
    const std::vector<std::string> known = transport::registeredTransports().networkTransports();
    name = known.empty() ? "none" : known.front();
  }
  const std::string source = config != nullptr && config->netName != nullptr ? "config.netName"
                             : config::isSet(config::Knob::Net) ? config::sourceName(config::Knob::Net)
                                                                : "the default";
  LOOM_INFO(NET, "network transport between hosts: %s (%s)%s", name.c_str(), source.c_str(),
            settings.transport.empty() ? "" : ("; LOOM_TRANSPORT=" + settings.transport + " forces every peer").c_str());
}

}  // namespace

CommSettings resolveSettings(const loomConfig_t* config) {
  CommSettings settings = merged(config);
  logNetTransport(settings, config);
  return settings;
}

}  // namespace loom
