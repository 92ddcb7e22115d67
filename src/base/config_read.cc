// SPDX-License-Identifier: Apache-2.0
// The readers: the one place where a variable's text becomes a value, and the one message
// format for a value that does not. See config.h for the rules.
#include <strings.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

namespace loom::config {
namespace {

bool setInEnvironment(const char* name) {
  const char* raw = std::getenv(name);
  return raw != nullptr && *raw != '\0';
}

// The LOOM_* variable, unless it is unset and an honoured alias is set: LOOM_* wins, so a
// LOOM_* setting added to an NCCL job's environment does what it says.
const char* source(const Entry& entry) {
  if (entry.ncclAlias == nullptr || setInEnvironment(entry.name) || !ncclAliasesHonoured()) return entry.name;
  return setInEnvironment(entry.ncclAlias) ? entry.ncclAlias : entry.name;
}

// What the environment holds for the knob; empty counts as unset (every reader before the
// registry treated it so).
std::string environmentValue(const Entry& entry) {
  const char* raw = std::getenv(source(entry));
  return raw != nullptr ? raw : "";
}

const Entry& checked(Knob knob, Type expected) {
  warnUnknownVariablesOnce();
  const Entry& found = entry(knob);
  if (found.type != expected) throwInternal(std::string("config: ") + found.name + " read as the wrong type");
  return found;
}

// Base 10, the whole text, as strtoll takes it (so " 5" and "+5" read as before the registry).
bool parseInteger(const std::string& text, int64_t* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') return false;
  *value = parsed;
  return true;
}

std::string joinValues(const Entry& entry, const char* quote) {
  std::string list;
  for (size_t i = 0; i < entry.values.size(); ++i) {
    if (i > 0) list += i + 1 == entry.values.size() ? " or " : ", ";
    list += std::string(quote) + entry.values[i] + quote;
  }
  return list;
}

}  // namespace

std::string shownDefault(const Entry& entry) {
  if (entry.defaultDoc != nullptr) return entry.defaultDoc;
  return entry.defaultValue;
}

std::string rule(const Entry& entry) {
  switch (entry.type) {
    case Type::Integer: {
      const std::string range =
          "an integer in [" + std::to_string(entry.min) + ", " + std::to_string(entry.max) + "]";
      return entry.zeroAllowed ? "0 or " + range : range;
    }
    case Type::Flag:
      return "0 or 1";
    case Type::Choice:
      return joinValues(entry, "`");
    case Type::Text:
      return entry.format != nullptr ? entry.format : "text";
  }
  return "?";
}

Reading read(Knob knob, const std::string& value) {
  const Entry& known = entry(knob);
  Reading reading;
  reading.value = value;
  switch (known.type) {
    case Type::Integer:
    case Type::Flag: {
      const int64_t minimum = known.type == Type::Flag ? 0 : known.min;
      const int64_t maximum = known.type == Type::Flag ? 1 : known.max;
      int64_t number = 0;
      const bool ok = parseInteger(value, &number) &&
                      ((number >= minimum && number <= maximum) || (known.zeroAllowed && number == 0));
      if (ok) {
        reading.value = std::to_string(number);
      } else {
        reading.problem = "not " + rule(known);
        reading.fatal = true;
      }
      return reading;
    }
    case Type::Choice: {
      std::vector<std::string> values;
      for (const char* candidate : known.values) {
        if (strcasecmp(candidate, value.c_str()) == 0) {
          reading.value = candidate;
          return reading;
        }
        values.emplace_back(candidate);
      }
      reading.problem = "not one of " + joinValues(known, "");
      if (auto nearest = closest(value, values)) reading.problem += " (did you mean " + *nearest + "?)";
      return reading;
    }
    case Type::Text:
      return reading;
  }
  return reading;
}

bool isSet(Knob knob) {
  warnUnknownVariablesOnce();
  return !environmentValue(entry(knob)).empty();
}

int64_t integer(Knob knob) {
  const Entry& known = checked(knob, Type::Integer);
  std::string value = environmentValue(known);
  if (value.empty()) value = known.defaultValue;
  if (value.empty()) throwArgument(std::string(known.name) + " is not set");
  const Reading reading = read(knob, value);
  if (!reading.problem.empty()) badValue(knob, value, reading.problem);
  return std::strtoll(reading.value.c_str(), nullptr, 10);
}

bool flag(Knob knob) {
  const Entry& known = checked(knob, Type::Flag);
  std::string value = environmentValue(known);
  if (value.empty()) value = known.defaultValue;
  const Reading reading = read(knob, value);
  if (!reading.problem.empty()) badValue(knob, value, reading.problem);
  return reading.value == "1";
}

std::string choice(Knob knob) {
  const Entry& known = checked(knob, Type::Choice);
  const std::string value = environmentValue(known);
  if (value.empty()) return known.defaultValue;
  const Reading reading = read(knob, value);
  if (reading.problem.empty()) return reading.value;
  warnValue(knob, value, reading.problem + "; using the default, " + shownDefault(known));
  return known.defaultValue;
}

std::string text(Knob knob) {
  const Entry& known = checked(knob, Type::Text);
  const std::string value = environmentValue(known);
  return value.empty() ? known.defaultValue : value;
}

std::string rawValue(Knob knob) { return environmentValue(entry(knob)); }

const char* sourceName(Knob knob) { return source(entry(knob)); }

std::string message(Knob knob, const std::string& value, const std::string& why) {
  const Entry& known = entry(knob);
  // A secret that is almost right would be nearly given away by repeating it.
  const std::string shown = known.secret ? "<" + std::to_string(value.size()) + " characters, not shown>"
                                         : "\"" + value + "\"";
  return std::string(source(known)) + "=" + shown + ": " + why;
}

void badValue(Knob knob, const std::string& value, const std::string& why) {
  throwArgument(message(knob, value, why));
}

void warnValue(Knob knob, const std::string& value, const std::string& why) {
  LOOM_WARN_ALWAYS(ENV, "%s", message(knob, value, why).c_str());
}

}  // namespace loom::config
