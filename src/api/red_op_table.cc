// SPDX-License-Identifier: Apache-2.0
#include "api/red_op_table.h"

#include <climits>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "base/datatype.h"
#include "base/error.h"
#include "base/fork_guard.h"

namespace loom::api {

namespace {

// Values start well above the built-in ops, so that a small garbage integer names no operator,
// and wrap around (skipping live ones) only after 2^31 - 2^16 creations: PyTorch makes one
// operator per call that uses it.
constexpr int kFirstValue = 1 << 16;

class RedOpTable {
 public:
  loomRedOp_t add(PreMulSumOp op) {
    std::lock_guard lock(mutex_);
    if (ops_.size() >= static_cast<size_t>(INT_MAX - kFirstValue))
      throwSystem("PreMulSum operators", ENOMEM);
    while (ops_.count(next_) != 0) advance();
    const int value = next_;
    advance();
    ops_.emplace(value, std::move(op));
    return static_cast<loomRedOp_t>(value);
  }

  // Runs use(op) under the lock if `value` is live; false if it is not.
  template <class Use>
  bool find(int value, Use&& use) const {
    std::lock_guard lock(mutex_);
    const auto it = ops_.find(value);
    if (it == ops_.end()) return false;
    use(it->second);
    return true;
  }

  enum class Removal { Removed, NotLive, OtherCommunicator };
  // Removes `value` if it is live and belongs to `comm`; otherwise says why not (and, for
  // another communicator's operator, names that communicator in *owner).
  Removal remove(int value, loomComm_t comm, std::string* owner) {
    std::lock_guard lock(mutex_);
    const auto it = ops_.find(value);
    if (it == ops_.end()) return Removal::NotLive;
    if (it->second.comm != comm) {
      *owner = it->second.commName;
      return Removal::OtherCommunicator;
    }
    ops_.erase(it);
    return Removal::Removed;
  }

  void removeAll(loomComm_t comm) {
    std::lock_guard lock(mutex_);
    for (auto it = ops_.begin(); it != ops_.end();)
      it = it->second.comm == comm ? ops_.erase(it) : std::next(it);
  }

  // A fork while another thread holds the lock leaves the child a working table (fork_guard.h).
  void guardAcrossFork() { loom::guardAcrossFork(mutex_); }

  // Why a value that is not live names nothing: it was made once, or never.
  std::string whyNotLive(int value) const {
    std::lock_guard lock(mutex_);
    const bool made = value >= kFirstValue && (wrapped_ || value < next_);
    return made ? "it was destroyed (loomRedOpDestroy, or its communicator was destroyed)"
                : "it was never made by loomRedOpCreatePreMulSum";
  }

 private:
  void advance() {
    if (next_ == INT_MAX) {
      next_ = kFirstValue;
      wrapped_ = true;
    } else {
      ++next_;
    }
  }

  mutable std::mutex mutex_;
  std::unordered_map<int, PreMulSumOp> ops_;
  int next_ = kFirstValue;
  bool wrapped_ = false;
};

// Never destroyed: handles are used by atexit handlers and threads still running at exit.
RedOpTable& table() {
  static auto* const ops = [] {
    auto* made = new RedOpTable();
    made->guardAcrossFork();
    return made;
  }();
  return *ops;
}

std::string opText(int op) { return "op " + std::to_string(op); }

}  // namespace

loomRedOp_t addPreMulSumOp(PreMulSumOp op) { return table().add(std::move(op)); }

void removePreMulSumOp(int op, loomComm_t comm, const std::string& commName) {
  if (op >= 0 && op < loomNumOps) {
    throwArgument(
        opText(op) + " (" + opName(static_cast<loomRedOp_t>(op)) +
        ") is a built-in operator: only operators made by loomRedOpCreatePreMulSum are destroyed");
  }
  std::string owner;
  switch (table().remove(op, comm, &owner)) {
    case RedOpTable::Removal::Removed:
      return;
    case RedOpTable::Removal::NotLive:
      throwArgument(opText(op) + " is not a live PreMulSum operator: " + table().whyNotLive(op));
    case RedOpTable::Removal::OtherCommunicator:
      throwArgument(opText(op) + " was created for communicator " + owner + ", not " + commName +
                    ": destroy it with the communicator it was created for");
  }
}

void removePreMulSumOps(loomComm_t comm) { table().removeAll(comm); }

void resolvePreMulSumOperator(algo::CallSpec& call, const std::string& commName) {
  int op, type;
  std::memcpy(&op, &call.op, sizeof(op));  // raw: a C caller may pass any int
  std::memcpy(&type, &call.type, sizeof(type));
  if (op < loomNumOps) return;  // built-in, or negative: validate() says which
  // Copied under the table's lock; the owner's name only when it is needed for an error.
  loomComm_t owner = nullptr;
  loomDataType_t ownType = loomFloat32;
  algo::PreMulSum scalar;
  std::string ownerName;
  const bool live = table().find(op, [&](const PreMulSumOp& entry) {
    owner = entry.comm;
    ownType = entry.type;
    scalar = entry.scalar;
    if (owner != call.comm) ownerName = entry.commName;
  });
  if (!live) {
    throwArgument(opText(op) +
                  " is neither a built-in reduction operator nor a live PreMulSum operator: " +
                  table().whyNotLive(op));
  }
  if (owner != call.comm) {
    throwArgument(opText(op) + " is a PreMulSum operator of communicator " + ownerName +
                  ", not of " + commName +
                  ": an operator serves only the communicator it was created for");
  }
  if (ownType != type) {
    throwArgument(opText(op) + " is a PreMulSum operator for " + typeName(ownType) + ", not for " +
                  (type >= 0 && type < loomNumTypes ? typeName(static_cast<loomDataType_t>(type))
                                                    : "datatype " + std::to_string(type)) +
                  ": an operator serves only the datatype it was created for");
  }
  call.premul = scalar;
  call.premul.active = true;
}

}  // namespace loom::api
