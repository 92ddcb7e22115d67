// SPDX-License-Identifier: Apache-2.0
#include "base/log.h"

#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "base/config.h"

namespace loom::log {

namespace {

// Which lines print. Read at the first log call and again by rereadSettings
// (loomResetDebugInit); atomics, as a reread may meet threads that are logging. Logging must be
// cheap and must never throw (config's readers for these two only warn).
struct Filter {
  std::atomic<Level> level{Level::None};
  std::atomic<unsigned> subsystems{ALL};
  std::atomic<bool> versionLine{false};  // LOOM_DEBUG=VERSION: that line alone
};

// NCCL's subsystem names Loom has no lines of its own for select nothing (bit 0): an NCCL
// environment's NCCL_DEBUG_SUBSYS=INIT,TUNING is not a mistake worth a warning.
const struct {
  const char* name;
  unsigned bit;
} kSubsystems[] = {{"INIT", INIT},     {"COLL", COLL},   {"NET", NET},       {"SHM", SHM},
                   {"GRAPH", GRAPH},   {"ENV", ENV},     {"ALLOC", ALLOC},   {"ALL", ALL},
                   {"BOOTSTRAP", NET}, {"P2P", 0},       {"TUNING", 0},      {"CALL", 0},
                   {"PROXY", 0},       {"NVLS", 0},      {"REG", 0},         {"PROFILE", 0},
                   {"RAS", 0}};

// LOOM_DEBUG_SUBSYS: comma list; a leading '^' inverts it (everything but these). An unknown
// name is reported and left out.
unsigned parseSubsystems(const std::string& text) {
  if (text.empty()) return ALL;
  const bool invert = text[0] == '^';
  const std::string list = invert ? text.substr(1) : text;
  unsigned mask = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    unsigned bit = 0;
    bool found = false;
    std::vector<std::string> known;
    for (const auto& subsystem : kSubsystems) {
      if (strcasecmp(subsystem.name, name.c_str()) == 0) bit = subsystem.bit, found = true;
      known.emplace_back(subsystem.name);
    }
    if (!found) {
      config::warnValue(config::Knob::DebugSubsys, text,
                        "unknown subsystem " + name + "; did you mean " +
                            config::closest(name, known).value_or("ALL") + "? (left out)");
    }
    mask |= bit;
  }
  return invert ? ~mask : mask;
}

// The registry's spelling of LOOM_DEBUG; VERSION and NONE (NCCL's) are Level::None.
Level parseLevel(const std::string& text) {
  if (text == "WARN") return Level::Warn;
  if (text == "INFO") return Level::Info;
  if (text == "TRACE") return Level::Trace;
  return Level::None;
}

Filter current;
std::mutex readMutex;  // one read at a time, so a reread cannot interleave with the first
bool everRead = false;

void readLocked() {
  const std::string level = config::choice(config::Knob::Debug);
  current.subsystems.store(parseSubsystems(config::text(config::Knob::DebugSubsys)), std::memory_order_relaxed);
  current.versionLine.store(level == "VERSION", std::memory_order_relaxed);
  current.level.store(parseLevel(level), std::memory_order_relaxed);
  everRead = true;
}

const Filter& filter() {
  static const bool read = [] {
    std::lock_guard lock(readMutex);
    if (!everRead) readLocked();
    return true;
  }();
  (void)read;
  return current;
}

// Apart from the filter: the registry's warnings, printed while the filter is being read,
// need it.
const char* hostName() {
  static const std::string host = [] {
    char name[64] = "?";
    gethostname(name, sizeof(name) - 1);
    return std::string(name);
  }();
  return host.c_str();
}

const char* subsystemName(unsigned subsys) {
  switch (subsys) {
    case INIT: return "INIT";
    case COLL: return "COLL";
    case NET: return "NET";
    case SHM: return "SHM";
    case GRAPH: return "GRAPH";
    case ENV: return "ENV";
    case ALLOC: return "ALLOC";
    default: return "LOOM";
  }
}

[[gnu::tls_model("initial-exec")]] thread_local int currentRank = -1;  // set on every call

}  // namespace

bool enabled(Level level, unsigned subsys) {
  const Filter& f = filter();
  return level <= f.level.load(std::memory_order_relaxed) &&
         (f.subsystems.load(std::memory_order_relaxed) & subsys) != 0;
}

bool versionLineEnabled() {
  return filter().versionLine.load(std::memory_order_relaxed) || enabled(Level::Info, INIT);
}

// Before the first read there is nothing to redo: the first log call reads them then. Reading
// now would do at once what the registry does at its first read (warn about unknown LOOM_*
// variables), in a process that may never log nor make a communicator.
void rereadSettings() {
  std::lock_guard lock(readMutex);
  if (everRead) readLocked();
}

void setThreadRank(int rank) { currentRank = rank; }
int threadRank() { return currentRank; }

void write(Level level, unsigned subsys, const char* fmt, ...) {
  char message[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  const char* levelName = level == Level::Warn ? "WARN" : level == Level::Info ? "INFO" : "TRACE";
  // One fprintf per line so lines of concurrent threads do not interleave mid-line.
  std::fprintf(stderr, "%s:%d:%d LOOM %s %s %s\n", hostName(), static_cast<int>(getpid()),
               currentRank, levelName, subsystemName(subsys), message);
}

}  // namespace loom::log
