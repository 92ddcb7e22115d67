// SPDX-License-Identifier: Apache-2.0
#include "core/settings.h"

#include <cctype>
#include <cstring>

#include "base/config.h"
#include "base/error.h"

namespace loom {

namespace {

// The registry name LOOM_TRANSPORT or config.netName asks for; "" for auto.
std::string parseTransport(std::string text, const char* source) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));  // NCCL says "Socket"
  if (text.empty() || text == "auto") return "";
  if (text == "shm") return "shm";
  if (text == "socket" || text == "tcp") return "socket";
  throwArgument(std::string(source) + "=\"" + text + "\": expected shm, socket or auto");
}

bool isSet(int value) { return value != LOOM_CONFIG_UNDEF_INT; }

// The environment's part; the registry checks each value (and its range) as it reads it.
CommSettings fromEnvironment() {
  using config::Knob;
  CommSettings settings;
  settings.timeoutMs = static_cast<int>(config::integer(Knob::TimeoutMs));
  settings.transport = parseTransport(config::choice(Knob::Transport), "LOOM_TRANSPORT");
  settings.shmDisabled = config::flag(Knob::ShmDisable);
  settings.socketsPerPeer = static_cast<int>(config::integer(Knob::SocketNsocks));
  settings.pieceBytes = static_cast<size_t>(config::integer(Knob::PieceBytes));
  settings.deviceCopyBytes = static_cast<size_t>(config::integer(Knob::DeviceCopyBytes));
  settings.shmSlotBytes = static_cast<size_t>(config::integer(Knob::ShmSlotBytes));
  settings.shmSlotBytes = (settings.shmSlotBytes + 63) / 64 * 64;
  settings.shmSlots = static_cast<int>(config::integer(Knob::ShmSlots));
  settings.spreadRanks = config::flag(Knob::SpreadRanks);
  settings.directDisabled = config::choice(Knob::Algo) == "ring";
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

}  // namespace

CommSettings resolveSettings(const loomConfig_t* config) {
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
  if (config->netName != nullptr) settings.transport = parseTransport(config->netName, "config.netName");
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

}  // namespace loom
