// SPDX-License-Identifier: Apache-2.0
// loom-env: Loom's environment variables as the library reads them. With no argument it checks
// the variables set now (the value each one is read as, or the error or warning the library
// would give; --nccl as Loom's libnccl.so.2 reads them); --markdown prints the tables
// docs/configuration.md holds, made from the registry (src/base/config_knobs.cc),
// --nccl-markdown docs/nccl.md's table of the NCCL_* variables honoured, and --update-docs puts
// them there.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/version.h"

namespace {

using loom::config::Entry;
using loom::config::Scope;
using loom::config::Type;

constexpr int kExitProblem = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "Usage: loom-env [--nccl | --markdown | --nccl-markdown | --update-docs FILE | --help | --version]\n"
    "\n"
    "Without an option: every Loom variable set in the environment (LOOM_* and the launcher\n"
    "variables Loom reads), with the value the library reads from it, or the error or warning\n"
    "it would give; LOOM_* variables Loom does not know are named with the closest known one.\n"
    "Text values (addresses, interface lists, fault lists) are checked where they are used.\n"
    "\n"
    "  --nccl                  the same as Loom's libnccl.so.2 reads them: NCCL_* aliases where\n"
    "                          the LOOM_* variable is unset, and the NCCL_* variables it ignores\n"
    "  --markdown              print the tables of every variable (docs/configuration.md)\n"
    "  --nccl-markdown         print the table of the NCCL_* variables honoured (docs/nccl.md)\n"
    "  --update-docs FILE      replace the tables in FILE (between the markers) with them\n"
    "  -h, --help              this text\n"
    "  --version               print loom-env's version (Loom's) and exit\n"
    "\n"
    "Exit status: 0 all good, 1 an error or warning, 2 bad usage or an unwritable file.\n";

const char* scopeHeading(Scope scope) {
  switch (scope) {
    case Scope::Library:
      return "Read by the library:";
    case Scope::Launcher:
      return "Set by a launcher (loomrun, torchrun, mpirun, srun), read by `loomCommInitFromEnv` "
             "(`LOOM_COMM_ID` also by `loomGetUniqueId`):";
    case Scope::Tools:
      return "Read by Loom's tools only:";
    case Scope::Tests:
      return "Read by the test suite only (`tests/meson.build` sets most of them):";
  }
  return "";
}

// A table cell: '|' would end it.
std::string cell(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (c == '|') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

std::string defaultCell(const Entry& entry) {
  if (entry.defaultDoc != nullptr) return entry.defaultDoc;
  if (*entry.defaultValue == '\0') return "—";
  return std::string("`") + entry.defaultValue + "`";
}

std::string aliasCell(const Entry& entry) {
  return entry.ncclAlias != nullptr ? std::string("`") + entry.ncclAlias + "`" : "—";
}

std::string markdown() {
  std::ostringstream out;
  for (Scope scope : {Scope::Library, Scope::Launcher, Scope::Tools, Scope::Tests}) {
    // The alias column only where a variable of the scope has one: the others would hold dashes.
    bool aliases = false;
    for (const Entry& entry : loom::config::entries()) aliases |= entry.scope == scope && entry.ncclAlias != nullptr;
    out << scopeHeading(scope) << "\n\n";
    out << (aliases ? "| variable | NCCL alias | accepts | default | meaning |\n"
                    : "| variable | accepts | default | meaning |\n");
    out << (aliases ? "| --- | --- | --- | --- | --- |\n" : "| --- | --- | --- | --- |\n");
    for (const Entry& entry : loom::config::entries()) {
      if (entry.scope != scope) continue;
      out << "| `" << entry.name << "` | " << (aliases ? aliasCell(entry) + " | " : "")
          << cell(loom::config::rule(entry)) << " | " << cell(defaultCell(entry)) << " | " << cell(entry.doc)
          << " |\n";
    }
    out << "\n";  // a table ends at a blank line
  }
  return out.str();
}

// docs/nccl.md's table: the aliases, by the NCCL name a user of NCCL looks for.
std::string ncclMarkdown() {
  std::ostringstream out;
  out << "| NCCL variable | Loom variable | accepts | default | meaning |\n";
  out << "| --- | --- | --- | --- | --- |\n";
  for (const Entry& entry : loom::config::entries()) {
    if (entry.ncclAlias == nullptr) continue;
    out << "| `" << entry.ncclAlias << "` | `" << entry.name << "` | " << cell(loom::config::rule(entry)) << " | "
        << cell(defaultCell(entry)) << " | " << cell(entry.doc) << " |\n";
  }
  out << "\n";
  return out.str();
}

// A generated part of a document: the lines between `begin` and `end` are `make()`'s.
struct Section {
  const char* begin;
  const char* end;
  std::string (*make)();
};

const Section kSections[] = {
    {"<!-- made by `loom-env --markdown` from src/base/config_knobs.cc; after editing that table, "
     "run `build/tools/loom-env --update-docs docs/configuration.md` -->",
     "<!-- end of `loom-env --markdown` -->", markdown},
    {"<!-- made by `loom-env --nccl-markdown` from src/base/config_knobs.cc; after editing that "
     "table, run `build/tools/loom-env --update-docs docs/nccl.md` -->",
     "<!-- end of `loom-env --nccl-markdown` -->", ncclMarkdown},
};

// Replaces the lines between each pair of markers the file holds; false (with a message) when
// it holds none, or a begin marker without its end.
bool updateDocs(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "loom-env: cannot read " << path << "\n";
    return false;
  }
  std::ostringstream updated;
  std::string line;
  const Section* inside = nullptr;
  int replaced = 0;
  while (std::getline(in, line)) {
    if (inside != nullptr) {
      if (line != inside->end) continue;
      inside = nullptr;
      ++replaced;
    }
    updated << line << "\n";
    for (const Section& section : kSections) {
      if (inside == nullptr && line == section.begin) {
        updated << section.make();
        inside = &section;
      }
    }
  }
  if (inside != nullptr || replaced == 0) {
    std::cerr << "loom-env: " << path << " lacks the lines that enclose the tables, one of these pairs:\n";
    for (const Section& section : kSections) std::cerr << "  " << section.begin << "\n  " << section.end << "\n";
    return false;
  }
  const std::string temporary = path + ".tmp";
  std::ofstream out(temporary);
  out << updated.str();
  out.close();
  if (!out || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::cerr << "loom-env: cannot write " << path << "\n";
    return false;
  }
  return true;
}

// The variables set now, one line each; the number of errors and warnings. `nccl`: read them
// as Loom's libnccl.so.2 does, NCCL_* aliases honoured.
int checkEnvironment(bool nccl) {
  if (nccl) loom::config::honourNcclAliases();
  int problems = 0;
  int listed = 0;
  for (const Entry& entry : loom::config::entries()) {
    const char* name = loom::config::sourceName(entry.knob);
    const std::string raw = loom::config::rawValue(entry.knob);
    if (raw.empty()) continue;
    ++listed;
    const loom::config::Reading reading = loom::config::read(entry.knob, raw);
    if (!reading.problem.empty()) {
      ++problems;
      std::cout << (reading.fatal ? "error:   " : "warning: ")
                << loom::config::message(entry.knob, raw, reading.problem)
                << (reading.fatal ? "" : "; the library uses the default, " + loom::config::shownDefault(entry))
                << "\n";
    } else if (entry.secret) {
      std::cout << "ok:      " << loom::config::message(entry.knob, raw, "set") << "\n";
    } else if (entry.type == Type::Text) {
      std::cout << "ok:      " << name << "=\"" << reading.value << "\"\n";
    } else {
      std::cout << "ok:      " << name << "=" << reading.value << "\n";
    }
  }
  // Not problems: an NCCL environment carries settings for NCCL that Loom has no use for.
  for (const std::string& note : loom::config::unhonouredNcclVariables()) {
    ++listed;
    std::cout << "note:    " << note << "\n";
  }
  for (const std::string& warning : loom::config::unknownVariables()) {
    ++problems;
    ++listed;
    std::cout << "warning: " << warning << "\n";
  }
  if (listed == 0) std::cout << "no Loom variable is set: every default applies\n";
  return problems;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any other argument is looked at: --version answers whatever else is given.
  loom::exitOnVersionFlag(argc, argv, "loom-env");
  const std::string option = argc > 1 ? argv[1] : "";
  if (argc == 1 || (argc == 2 && option == "--nccl")) return checkEnvironment(argc == 2) == 0 ? 0 : kExitProblem;
  if (argc == 2 && (option == "-h" || option == "--help")) {
    std::cout << kUsage;
    return 0;
  }
  if (argc == 2 && option == "--markdown") {
    std::cout << markdown();
    return 0;
  }
  if (argc == 2 && option == "--nccl-markdown") {
    std::cout << ncclMarkdown();
    return 0;
  }
  if (argc == 3 && option == "--update-docs") return updateDocs(argv[2]) ? 0 : kExitUsage;
  std::cerr << "loom-env: unexpected arguments\n" << kUsage;
  return kExitUsage;
}
