// SPDX-License-Identifier: Apache-2.0
#include "user_errors.h"

#include <cctype>
#include <utility>

namespace loom_torch {

namespace {

// Replaces every `from` in `text` by `to`.
void replaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// Loom's collective names as torch.distributed calls them.
const std::pair<const char*, const char*> kOperations[] = {
    {"allreduce", "all_reduce"},        {"allgather", "all_gather"}, {"reducescatter", "reduce_scatter"},
    {"alltoallv", "all_to_all"},        {"alltoall", "all_to_all"},  {"broadcast", "broadcast"},
    {"reduce", "reduce"},               {"gather", "gather"},        {"scatter", "scatter"},
    {"barrier", "barrier"},             {"send", "send"},            {"recv", "recv"},
};

// The call a refusal names ("allreduce #2 (10 x float32)") with torch's name for it.
std::string torchCall(const std::string& call) {
  for (const auto& [loom, torch] : kOperations) {
    const std::string name = loom;
    const bool whole = call.size() == name.size() || !std::isalnum(static_cast<unsigned char>(call[name.size()]));
    if (call.compare(0, name.size(), name) == 0 && whole) return torch + call.substr(name.size());
  }
  return call;
}

// "communicator C is unusable since its CALL failed; destroy it (loomCommDestroy) and create a
// new one (after a dead rank, loomCommShrink makes one of the survivors). The failure of NAME:"
// (core/error_state.cc), in process-group terms.
void rewriteRefusal(std::string& text) {
  static const std::string kSubject = "communicator ";
  static const std::string kSince = " is unusable since its ";
  static const std::string kFailed = " failed; destroy it (loomCommDestroy) and create a new one (after a dead rank, "
                                     "loomCommShrink makes one of the survivors). The failure of ";
  const size_t since = text.find(kSince);
  if (since == std::string::npos) return;
  const size_t subject = text.rfind(kSubject, since);
  const size_t failed = text.find(kFailed, since);
  if (subject == std::string::npos || failed == std::string::npos) return;
  const size_t nameEnd = text.find(": ", failed + kFailed.size());
  if (nameEnd == std::string::npos) return;
  const std::string call = text.substr(since + kSince.size(), failed - since - kSince.size());
  const std::string name = text.substr(failed + kFailed.size(), nameEnd - failed - kFailed.size());
  text = text.substr(0, subject) + "the process group is unusable since its " + torchCall(call) +
         " failed; destroy it and create a new one (destroy_process_group() then init_process_group(), or a new "
         "new_group()). The failure of " + torchCall(name) + text.substr(nameEnd);
}

// "allreduce #2" -> "all_reduce #2" wherever Loom numbers a call.
void renameNumberedCalls(std::string& text) {
  for (const auto& [loom, torch] : kOperations) {
    const std::string from = std::string(loom) + " #";
    const std::string to = std::string(torch) + " #";
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 1)) {
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_')) continue;
      text.replace(at, from.size(), to);
    }
  }
}

}  // namespace

std::string inUserTerms(const std::string& message) {
  std::string text = message;
  rewriteRefusal(text);
  renameNumberedCalls(text);
  replaceAll(text, "left the communicator (loomCommDestroy, loomCommAbort, or its process exited)",
             "exited or destroyed its process group");
  replaceAll(text, "(its call failed, or it destroyed or aborted its communicator)",
             "(its call failed, or it destroyed its process group)");
  replaceAll(text, "aborted (loomCommAbort or loomCommRevoke)", "aborted (its process group was destroyed)");
  return text;
}

}  // namespace loom_torch
