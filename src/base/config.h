// SPDX-License-Identifier: Apache-2.0
// The registry of configuration knobs: every environment variable Loom reads (its own LOOM_*
// ones and the launchers' RANK, SLURM_PROCID, ...) is one entry of one table (config_knobs.cc) with
// its type, range, default and a one-line doc, and is read only through the readers below. So
// a bad value gets the same error whichever part of Loom reads it, README's table is made from
// the entries (tools/loom-env --markdown), and a LOOM_* variable no entry names is reported.
//
// Messages have one shape for every variable:  NAME="value": what is wrong
//   - malformed integers, out-of-range integers and flags other than 0/1 throw
//     loom::Error(loomInvalidArgument);
//   - an unknown value of a choice (LOOM_HOST_ISA=quantum) is a warning, printed whatever
//     LOOM_DEBUG says, with the closest known value; the default is used;
//   - structured text (LOOM_COMM_ID, LOOM_SOCKET_IFNAME, LOOM_FAULT, LOOM_NET, ...) is parsed by
//     the one function that owns it, which reports through badValue/warnValue.
// Values are read from the environment at every call (tests change it between
// communicators). Unset and empty mean the same: the default.
//
// NCCL_* aliases: some entries name the NCCL_* variable of the same meaning (ncclAlias). They
// are read only in a process that asked for them (honourNcclAliases: Loom's libnccl.so.2 does
// as it loads), only where the LOOM_* variable is unset, and by the same rules; a message then
// names the NCCL_* variable, since that is the one the user set.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::config {

// One name per entry, in the table's order.
enum class Knob {
  // The library's own settings.
  Debug,
  DebugSubsys,
  TimeoutMs,
  InitReportMs,
  SocketIfname,
  SocketFamily,
  HostId,
  Transport,
  Net,
  ShmDisable,
  SocketNsocks,
  Check,
  Fault,
  PieceBytes,
  Algo,
  DirectEagerBytes,
  Cma,
  Deterministic,
  DirectChunkBytes,
  StreamCopyBytes,
  StreamReduceBytes,
  HostIsa,
  Device,
  DeviceCopyBytes,
  ShmSlotBytes,
  ShmSlots,
  SpreadRanks,
  TopoFile,
  TopoDumpFile,
  GraphFile,
  GraphDumpFile,
  P2pLevel,
  NetGdrLevel,
  // How a launched job finds its rank, size and rendezvous (loomCommInitFromEnv).
  CommId,
  CommSecret,
  LoomRank,
  LoomWorldSize,
  LoomLocalRank,
  LoomLocalSize,
  TorchRank,
  TorchWorldSize,
  MasterAddr,
  MasterPort,
  TorchRunId,
  OmpiRank,
  OmpiSize,
  OmpiJobId,
  PmixNamespace,
  SlurmProcId,
  SlurmNtasks,
  SlurmJobId,
  SlurmStepId,
  // Read by Loom's tools only.
  PerfInjectFault,
  GlooStoreDir,
  // Read by the test suite only (tests/meson.build sets most of them).
  TestData,
  PerfDir,
  TopoExe,
  HelloExe,
  EnvExe,
  SoakSeed,
  SoakIterations,
  DeterministicGrid,
  DeviceGrid,
  DeviceRanksExe,
};

enum class Type {
  Integer,  // decimal, within [min, max] (or 0 where zeroAllowed)
  Flag,     // 0 or 1
  Choice,   // one of `values`, case-insensitive
  Text,     // free text; `format` says what it looks like, its owner parses it
};

// Who reads the variable; README groups the table by it.
enum class Scope { Library, Launcher, Tools, Tests };

// One variable. Fields in the order the table (config_knobs.cc) writes them; an entry leaves out
// those that do not apply.
struct Entry {
  Knob knob;
  const char* name;
  Type type;
  Scope scope;
  int64_t min = 0;  // Integer: the accepted range
  int64_t max = 0;
  bool zeroAllowed = false;  // Integer: 0 ("automatic") is accepted below min
  std::span<const char* const> values = {};  // Choice, in the order README lists them
  const char* format = nullptr;  // Text: its shape, for README and messages
  bool secret = false;           // the value is never repeated in a message (LOOM_COMM_SECRET)
  // What the readers return when the variable is unset: an integer, "0"/"1", one of `values`,
  // or text. "" means there is none: a text that stays empty, a choice decided at run time
  // (LOOM_HOST_ISA: the best the CPU has), an integer that must be set before it is read.
  const char* defaultValue = "";
  // The default as a person reads it ("never", "best available"); null: defaultValue.
  const char* defaultDoc = nullptr;
  const char* doc = "";  // one line, markdown
  // The NCCL_* variable of the same meaning and values, read in place of the unset LOOM_* one
  // where aliases are honoured (honourNcclAliases), else null. Only Loom's libnccl.so.2 honours
  // them: a program linked to libloom alone keeps ignoring an NCCL environment left in place,
  // which was tuned for another library. Setting one is a decision, with its own tests
  // (tests/unit/test_nccl_variables.cc) and docs/nccl.md's table, not a table edit.
  const char* ncclAlias = nullptr;
};

// The whole table, in Knob order.
std::span<const Entry> entries();
const Entry& entry(Knob knob);
// The entry named exactly `name`, or null.
const Entry* find(std::string_view name);

// ---- Reading ---------------------------------------------------------------------------------
// Every reader first makes sure the environment was checked for unknown LOOM_* names
// (warnUnknownVariablesOnce). A reader of the wrong type for the knob is a bug: loomInternalError.
// Each reads the LOOM_* variable, or, when that is unset and aliases are honoured, its NCCL_*
// alias (sourceName says which).

bool isSet(Knob knob);           // set to a non-empty value
int64_t integer(Knob knob);      // Integer; the default when unset (none: loomInvalidArgument)
bool flag(Knob knob);            // Flag
// Choice: the value as the table spells it ("tcp", "SYS"); when unset, or set to an unknown
// value (after the warning), the default, which is "" for a choice decided at run time.
std::string choice(Knob knob);
std::string text(Knob knob);     // Text: the value as set, else the default
// The text as the environment holds it, unparsed ("" when unset), from the variable sourceName
// names: for loom-env, which shows each value beside what it reads as.
std::string rawValue(Knob knob);

// How `value` reads under the knob's rules, without throwing or printing: what loom-env
// shows, and what the readers act on.
struct Reading {
  std::string value;    // the canonical form: decimal integer, "0"/"1", the choice's spelling, the text
  std::string problem;  // empty when valid; else what is wrong, for message()
  bool fatal = false;   // a problem that is an error (bad integer, flag); else a warning (choice)
};
Reading read(Knob knob, const std::string& value);

// ---- Reporting -------------------------------------------------------------------------------

// NAME="value": why  (a secret's value is replaced by its length).
std::string message(Knob knob, const std::string& value, const std::string& why);
// Throws loom::Error(loomInvalidArgument) with message(): for the owners of structured text.
[[noreturn]] void badValue(Knob knob, const std::string& value, const std::string& why);
// Prints message() as a warning whatever LOOM_DEBUG says.
void warnValue(Knob knob, const std::string& value, const std::string& why);
// The variable the knob's value comes from now: the entry's name, or its NCCL_* alias when
// aliases are honoured, the LOOM_* one is unset and the alias is set. message() names it.
const char* sourceName(Knob knob);
// What the knob accepts, as README and the messages say it: "an integer in [1, 16]",
// "0 or 1", "`auto`, `shm`, `socket` or `tcp`", or the text's format.
std::string rule(const Entry& entry);
// The default as a person reads it: defaultDoc, else defaultValue ("auto", "best available").
std::string shownDefault(const Entry& entry);

// ---- Unknown variables -----------------------------------------------------------------------

// One warning per LOOM_* variable of the environment that no entry names, with the closest
// known name: "LOOM_TIMEOUT: unknown variable; did you mean LOOM_TIMEOUT_MS?".
std::vector<std::string> unknownVariables();
// Prints unknownVariables() once per process, whatever LOOM_DEBUG says. Every reader calls
// it, so it happens at the library's first look at its settings (loomGetUniqueId and every
// loomCommInit* read some).
void warnUnknownVariablesOnce();

// ---- NCCL_* aliases (config_nccl.cc) -------------------------------------------------------

// From now on, for the whole process, the readers fall back to the entries' NCCL_* aliases.
// There is no way back: what a communicator read must not change under it.
void honourNcclAliases();
bool ncclAliasesHonoured();
// What a process that honours aliases does not take from its NCCL_* variables, one line per
// variable: those set that no entry has as its alias ("NCCL_ALGO: not honoured by Loom"), and
// aliases set whose LOOM_* variable wins. Empty where aliases are not honoured: then no NCCL_*
// variable counts.
std::vector<std::string> unhonouredNcclVariables();
// Logs unhonouredNcclVariables() at INFO (subsystem ENV), once per process: the first call
// that finds aliases honoured does it. Called as a communicator is first made.
void reportNcclVariablesOnce();

// The candidate nearest to `text` by edit distance (case-insensitive; ties: the first), or
// nullopt when there are no candidates.
std::optional<std::string> closest(std::string_view text, const std::vector<std::string>& candidates);

}  // namespace loom::config
