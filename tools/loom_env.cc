// SPDX-License-Identifier: Apache-2.0
// loom-env: Loom's environment variables as the library reads them. With no argument it checks
// the variables set now (the value each one is read as, or the error or warning the library
// would give); --markdown prints the tables docs/configuration.md holds, made from the
// registry (src/base/config_knobs.cc), and --update-docs puts them there.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "base/config.h"
#include "base/version.h"

namespace {

using loom::config::Entry;
using loom::config::Scope;
using loom::config::Type;

constexpr int kExitProblem = 1;
constexpr int kExitUsage = 2;

// docs/configuration.md's generated part lies between these two lines.
constexpr const char* kBeginMarker =
    "<!-- made by `loom-env --markdown` from src/base/config_knobs.cc; after editing that table, "
    "run `build/tools/loom-env --update-docs docs/configuration.md` -->";
constexpr const char* kEndMarker = "<!-- end of `loom-env --markdown` -->";

const char kUsage[] =
    "Usage: loom-env [--markdown | --update-docs docs/configuration.md | --help | --version]\n"
    "\n"
    "Without an option: every Loom variable set in the environment (LOOM_* and the launcher\n"
    "variables Loom reads), with the value the library reads from it, or the error or warning\n"
    "it would give; LOOM_* variables Loom does not know are named with the closest known one.\n"
    "Text values (addresses, interface lists, fault lists) are checked where they are used.\n"
    "\n"
    "  --markdown              print the tables of every variable (docs/configuration.md)\n"
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

std::string markdown() {
  std::ostringstream out;
  for (Scope scope : {Scope::Library, Scope::Launcher, Scope::Tools, Scope::Tests}) {
    out << scopeHeading(scope) << "\n\n";
    out << "| variable | accepts | default | meaning |\n";
    out << "| --- | --- | --- | --- |\n";
    for (const Entry& entry : loom::config::entries()) {
      if (entry.scope != scope) continue;
      out << "| `" << entry.name << "` | " << cell(loom::config::rule(entry)) << " | "
          << cell(defaultCell(entry)) << " | " << cell(entry.doc) << " |\n";
    }
    out << "\n";  // a table ends at a blank line
  }
  return out.str();
}

// Replaces the lines between the markers; false (with a message) when they are missing.
bool updateDocs(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "loom-env: cannot read " << path << "\n";
    return false;
  }
  std::ostringstream updated;
  std::string line;
  enum { Before, Inside, After } where = Before;
  while (std::getline(in, line)) {
    if (where == Before) {
      updated << line << "\n";
      if (line == kBeginMarker) {
        updated << markdown();
        where = Inside;
      }
    } else if (where == Inside) {
      if (line == kEndMarker) {
        updated << line << "\n";
        where = After;
      }
    } else {
      updated << line << "\n";
    }
  }
  if (where != After) {
    std::cerr << "loom-env: " << path << " lacks the lines\n  " << kBeginMarker << "\n  "
              << kEndMarker << "\nthat enclose the tables\n";
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

// The variables set now, one line each; the number of errors and warnings.
int checkEnvironment() {
  int problems = 0;
  int listed = 0;
  for (const Entry& entry : loom::config::entries()) {
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
      std::cout << "ok:      " << entry.name << "=\"" << reading.value << "\"\n";
    } else {
      std::cout << "ok:      " << entry.name << "=" << reading.value << "\n";
    }
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
  if (argc == 1) return checkEnvironment() == 0 ? 0 : kExitProblem;
  if (argc == 2 && (option == "-h" || option == "--help")) {
    std::cout << kUsage;
    return 0;
  }
  if (argc == 2 && option == "--markdown") {
    std::cout << markdown();
    return 0;
  }
  if (argc == 3 && option == "--update-docs") return updateDocs(argv[2]) ? 0 : kExitUsage;
  std::cerr << "loom-env: unexpected arguments\n" << kUsage;
  return kExitUsage;
}
