#include "core/settings.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace loom {

long envInteger(const char* name, long fallback, long minimum, long maximum) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == 0) return fallback;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != 0 || value < minimum || value > maximum) {
    throwArgument(std::string(name) + "=" + text + " is not an integer in [" +
                  std::to_string(minimum) + ", " + std::to_string(maximum) + "]");
  }
  return value;
}

std::string envString(const char* name, const std::string& fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != 0 ? text : fallback;
}

namespace {

TransportChoice parseTransport(std::string text, const char* source) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));  // NCCL says "Socket"
  if (text.empty() || text == "auto") return TransportChoice::Auto;
  if (text == "shm") return TransportChoice::Shm;
  if (text == "socket" || text == "tcp") return TransportChoice::Socket;
  throwArgument(std::string(source) + "=\"" + text + "\": expected shm, socket or auto");
}

bool isSet(int value) { return value != LOOM_CONFIG_UNDEF_INT; }

}  // namespace

CommSettings resolveSettings(const loomConfig_t* config) {
  CommSettings settings;
  settings.timeoutMs = static_cast<int>(envInteger("LOOM_TIMEOUT_MS", settings.timeoutMs, 1, INT32_MAX));
  settings.transport = parseTransport(envString("LOOM_TRANSPORT"), "LOOM_TRANSPORT");
  settings.shmDisabled = envInteger("LOOM_SHM_DISABLE", 0, 0, 1) == 1;
  settings.socketsPerPeer = static_cast<int>(envInteger("LOOM_SOCKET_NSOCKS", settings.socketsPerPeer, 1, 16));
  settings.pieceBytes = envInteger("LOOM_PIECE_BYTES", settings.pieceBytes, 0, 64L << 20);
  if (settings.pieceBytes != 0 && settings.pieceBytes < 64) throwArgument("LOOM_PIECE_BYTES must be 0 (automatic) or at least 64");
  settings.shmSlotBytes = envInteger("LOOM_SHM_SLOT_BYTES", settings.shmSlotBytes, 64, 64L << 20);
  settings.shmSlotBytes = (settings.shmSlotBytes + 63) / 64 * 64;
  settings.shmSlots = static_cast<int>(envInteger("LOOM_SHM_SLOTS", settings.shmSlots, 2, 1024));
  const std::string algorithm = envString("LOOM_ALGO", "auto");
  if (algorithm != "auto" && algorithm != "ring") {
    throwArgument("LOOM_ALGO must be auto or ring, not '" + algorithm + "'");
  }
  settings.directDisabled = algorithm == "ring";
  settings.directEagerBytes = envInteger("LOOM_DIRECT_EAGER_BYTES", settings.directEagerBytes, 0, 64L << 20);
  settings.directEagerBytes = (settings.directEagerBytes + 63) / 64 * 64;
  settings.directChunkBytes = envInteger("LOOM_DIRECT_CHUNK_BYTES", settings.directChunkBytes, 4096, 1L << 30);
  settings.crossMemoryEnabled = envInteger("LOOM_CMA", 0, 0, 1) == 1;
  settings.streamCopyBytes = envInteger("LOOM_STREAM_COPY_BYTES", settings.streamCopyBytes, 0, INT64_MAX);
  settings.streamReduceBytes = envInteger("LOOM_STREAM_REDUCE_BYTES", settings.streamReduceBytes, 0, INT64_MAX);
  settings.checkLevel = static_cast<int>(envInteger("LOOM_CHECK", settings.checkLevel, 0, 2));

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
  return settings;
}

}  // namespace loom
