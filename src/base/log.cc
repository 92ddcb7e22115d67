#include "base/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace loom::log {

namespace {

struct Settings {
  Level level = Level::None;
  unsigned subsystems = ALL;
  char host[64] = "?";
};

unsigned subsystemBit(const std::string& name) {
  static const struct {
    const char* name;
    unsigned bit;
  } table[] = {{"INIT", INIT}, {"COLL", COLL},   {"NET", NET},     {"SHM", SHM},
               {"GRAPH", GRAPH}, {"ENV", ENV}, {"ALLOC", ALLOC}, {"ALL", ALL}};
  for (const auto& entry : table) {
    if (strcasecmp(entry.name, name.c_str()) == 0) return entry.bit;
  }
  return 0;
}

// LOOM_DEBUG_SUBSYS: comma list; a leading '^' inverts it (everything but these).
unsigned parseSubsystems(const char* text) {
  if (text == nullptr || *text == 0) return ALL;
  bool invert = text[0] == '^';
  if (invert) ++text;
  unsigned mask = 0;
  std::string list(text);
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    mask |= subsystemBit(list.substr(start, end - start));
    start = end + 1;
  }
  return invert ? ~mask : mask;
}

Level parseLevel(const char* text) {
  if (text == nullptr) return Level::None;
  if (strcasecmp(text, "WARN") == 0) return Level::Warn;
  if (strcasecmp(text, "INFO") == 0) return Level::Info;
  if (strcasecmp(text, "TRACE") == 0) return Level::Trace;
  return Level::None;
}

const Settings& settings() {
  static const Settings instance = [] {
    Settings s;
    s.level = parseLevel(std::getenv("LOOM_DEBUG"));
    s.subsystems = parseSubsystems(std::getenv("LOOM_DEBUG_SUBSYS"));
    gethostname(s.host, sizeof(s.host) - 1);
    return s;
  }();
  return instance;
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

thread_local int currentRank = -1;

}  // namespace

bool enabled(Level level, unsigned subsys) {
  const Settings& s = settings();
  return level <= s.level && (s.subsystems & subsys) != 0;
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
  std::fprintf(stderr, "%s:%d:%d LOOM %s %s %s\n", settings().host, static_cast<int>(getpid()),
               currentRank, levelName, subsystemName(subsys), message);
}

}  // namespace loom::log
