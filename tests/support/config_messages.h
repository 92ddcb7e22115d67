// SPDX-License-Identifier: Apache-2.0
// What the configuration tests read from a failure: the message a registry reader throws, and
// the part of a C call's last error that the registry wrote.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "loom.h"

namespace loom::test {

// The message `body` throws (loomInvalidArgument, checked), or "" when it does not throw.
template <typename Body>
std::string errorOf(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), loomInvalidArgument) << error.what();
    return error.what();
  }
  return "";
}

// A C call's last error from the variable's name on: the part the registry wrote, whatever the
// call put before it.
inline std::string fromVariable(const std::string& message, const std::string& name) {
  const size_t at = message.find(name + "=");
  return at == std::string::npos ? "(no " + name + " in: " + message + ")" : message.substr(at);
}

}  // namespace loom::test
