// SPDX-License-Identifier: Apache-2.0
// loomrun: starts N local processes of a program as the ranks of one Loom job, the way
// mpirun or torchrun would on a single host. See usageText() for the command line.
#include <unistd.h>

#include <exception>
#include <string>

#include "base/error.h"
#include "base/version.h"
#include "tools/loomrun_options.h"
#include "tools/loomrun_output.h"
#include "tools/loomrun_supervisor.h"

int main(int argc, char** argv) {
  using namespace loom::launcher;
  LaunchOptions options;
  try {
    options = parseOptions(argc, argv);
  } catch (const loom::Error& error) {
    writeAll(STDERR_FILENO, std::string("loomrun: ") + error.what() + "\n" + usageText());
    return 2;
  }
  if (options.version) {
    writeAll(STDOUT_FILENO, loom::versionLine("loomrun"));
    return 0;
  }
  if (options.help) {
    writeAll(STDOUT_FILENO, usageText());
    return 0;
  }
  try {
    Supervisor supervisor(options);
    return supervisor.run();
  } catch (const std::exception& error) {
    writeAll(STDERR_FILENO, std::string(error.what()) + "\n");
    return 1;
  }
}
