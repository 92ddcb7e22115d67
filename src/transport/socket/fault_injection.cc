// SPDX-License-Identifier: Apache-2.0
#include "transport/socket/fault_injection.h"

#include <cstdlib>
#include <sstream>

#include "base/config.h"
#include "base/error.h"

namespace loom::transport {
namespace {

// Errors name the whole variable and the item, in the registry's format.
int64_t parseNumber(const std::string& text, const std::string& item, const std::string& value,
                    int64_t minimum) {
  char* end = nullptr;
  errno = 0;
  const long long number = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || number < minimum) {
    config::badValue(config::Knob::Fault, text, "'" + item + "' needs an integer >= " + std::to_string(minimum));
  }
  return number;
}

}  // namespace

FaultPlan FaultPlan::parse(const std::string& text, int rank) {
  FaultPlan plan;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    std::string body = item;
    if (const size_t at = body.find('@'); at != std::string::npos) {
      const int64_t only = parseNumber(text, item, body.substr(at + 1), 0);
      body = body.substr(0, at);
      if (only != rank) continue;
    }
    const size_t equals = body.find('=');
    if (equals == std::string::npos) {
      config::badValue(config::Knob::Fault, text, "'" + item + "' is not name=value[@rank]");
    }
    const std::string name = body.substr(0, equals);
    const std::string value = body.substr(equals + 1);
    if (name == "close_after") {
      plan.closeAfterBytes = parseNumber(text, item, value, 0);
    } else if (name == "delay_ms") {
      plan.delayMs = static_cast<int>(std::min<int64_t>(parseNumber(text, item, value, 0), 60000));
    } else if (name == "short_io") {
      plan.shortIo = static_cast<size_t>(parseNumber(text, item, value, 1));
    } else if (name == "corrupt_header") {
      plan.corruptHeader = parseNumber(text, item, value, 1);
    } else {
      config::badValue(config::Knob::Fault, text,
                       "unknown fault '" + name + "' (known: close_after, delay_ms, short_io, corrupt_header)");
    }
  }
  return plan;
}

FaultPlan FaultPlan::fromEnvironment(int rank) {
  const std::string text = config::text(config::Knob::Fault);
  return text.empty() ? FaultPlan{} : parse(text, rank);
}

std::string FaultPlan::describe() const {
  std::string text;
  auto add = [&](const std::string& item) { text += (text.empty() ? "" : ",") + item; };
  if (closeAfterBytes >= 0) add("close_after=" + std::to_string(closeAfterBytes));
  if (delayMs > 0) add("delay_ms=" + std::to_string(delayMs));
  if (shortIo > 0) add("short_io=" + std::to_string(shortIo));
  if (corruptHeader > 0) add("corrupt_header=" + std::to_string(corruptHeader));
  return text.empty() ? "none" : text;
}

}  // namespace loom::transport
