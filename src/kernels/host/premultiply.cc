// SPDX-License-Identifier: Apache-2.0
#include "kernels/host/premultiply.h"

#include <cstring>
#include <string>

#include "base/datatype.h"
#include "base/error.h"
#include "kernels/reduce_ops.h"

namespace loom::kernels {

void premultiply(loomDataType_t type, void* dst, const void* src, size_t count,
                 uint64_t scalarBits) {
  const bool known = visitDataType(type, [&](auto typeTag) {
    using T = decltype(typeTag);
    static_assert(sizeof(T) <= sizeof(scalarBits));
    T scalar;
    std::memcpy(&scalar, &scalarBits, sizeof(T));  // where the API copied them (CallSpec::premul)
    const Prod<T> multiply;
    auto* out = static_cast<T*>(dst);
    const auto* in = static_cast<const T*>(src);
    for (size_t i = 0; i < count; ++i) out[i] = multiply(in[i], scalar);
  });
  if (!known) {
    throwArgument(std::string("premultiply: unsupported datatype ") + typeName(type) + " (" +
                  std::to_string(static_cast<int>(type)) + ")");
  }
}

}  // namespace loom::kernels
