// SPDX-License-Identifier: Apache-2.0
// Logging: LOOM_DEBUG=WARN|INFO|TRACE selects the level (VERSION: the version line alone),
// LOOM_DEBUG_SUBSYS=INIT,COLL,NET,... (or ALL, or ^X to exclude) the subsystems; both are read
// at the first log call, through the configuration registry (base/config), and again by
// rereadSettings. Lines go to stderr as "host:pid:rank LOOM LEVEL SUBSYS msg".
#pragma once

#include <string>

namespace loom::log {

enum class Level { None = 0, Warn = 1, Info = 2, Trace = 3 };
enum Subsys : unsigned {
  INIT = 1u << 0,
  COLL = 1u << 1,
  NET = 1u << 2,  // sockets and bootstrap
  SHM = 1u << 3,
  GRAPH = 1u << 4,
  ENV = 1u << 5,
  ALLOC = 1u << 6,
  ALL = ~0u
};

bool enabled(Level level, unsigned subsys);
// Whether the "Loom version" line prints: at INFO and above (subsystem INIT), and at
// LOOM_DEBUG=VERSION whatever the subsystems (NCCL_DEBUG=VERSION prints NCCL's version line).
bool versionLineEnabled();
// Reads LOOM_DEBUG and LOOM_DEBUG_SUBSYS again (loomResetDebugInit, ncclResetDebugInit); before
// the first log call it does nothing, as that call reads them.
void rereadSettings();
// printf-style; rank is taken from the thread's current rank (setThreadRank), -1 if unknown.
// Prints whatever the level and subsystems say: LOOM_LOG checks them first.
void write(Level level, unsigned subsys, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
// Tags this thread's log lines with a rank (the communicator sets it while it works).
void setThreadRank(int rank);
int threadRank();

}  // namespace loom::log

#define LOOM_LOG(level, subsys, ...)                                             \
  do {                                                                           \
    if (::loom::log::enabled(level, subsys)) ::loom::log::write(level, subsys, __VA_ARGS__); \
  } while (0)
#define LOOM_WARN(subsys, ...) LOOM_LOG(::loom::log::Level::Warn, ::loom::log::subsys, __VA_ARGS__)
#define LOOM_INFO(subsys, ...) LOOM_LOG(::loom::log::Level::Info, ::loom::log::subsys, __VA_ARGS__)
#define LOOM_TRACE(subsys, ...) LOOM_LOG(::loom::log::Level::Trace, ::loom::log::subsys, __VA_ARGS__)
// The version line, printed as an INFO line of INIT wherever versionLineEnabled() says.
#define LOOM_VERSION_LINE(...)                                                                    \
  do {                                                                                           \
    if (::loom::log::versionLineEnabled()) ::loom::log::write(::loom::log::Level::Info, ::loom::log::INIT, __VA_ARGS__); \
  } while (0)
// A warning printed whatever LOOM_DEBUG says: for mistakes the user has to see even with
// logging off (an unknown variable or value in the environment).
#define LOOM_WARN_ALWAYS(subsys, ...) \
  ::loom::log::write(::loom::log::Level::Warn, ::loom::log::subsys, __VA_ARGS__)
