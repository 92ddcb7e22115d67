// SPDX-License-Identifier: Apache-2.0
// A non-owning reference to a callable, for a callback that is used only while the callable
// it names is alive. Unlike std::function it never allocates and costs no set-up or tear-down
// beyond two pointers, which matters where it is built on every call (the executor's error
// context on a point-to-point exchange) and called almost never.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace loom {

template <class Signature>
class FunctionRef;

template <class Result, class... Args>
class FunctionRef<Result(Args...)> {
 public:
  FunctionRef() = default;
  // Refers to `callable`, which must outlive every call through this reference: bind a named
  // local, never a temporary that dies at the end of the statement.
  template <class Callable,
            class = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<Callable>, FunctionRef> &&
                                     std::is_invocable_r_v<Result, Callable&, Args...>>>
  FunctionRef(Callable& callable)  // NOLINT: implicit, like std::function
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(callable)))),
        call_([](void* object, Args... args) -> Result {
          return (*static_cast<Callable*>(object))(std::forward<Args>(args)...);
        }) {}

  explicit operator bool() const { return call_ != nullptr; }
  Result operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_ = nullptr;
  Result (*call_)(void*, Args...) = nullptr;
};

}  // namespace loom
