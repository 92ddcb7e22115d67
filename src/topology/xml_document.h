// SPDX-License-Identifier: Apache-2.0
// A small XML reader and writer, enough for NCCL's topology and graph files: elements,
// attributes (single or double quotes), self-closing tags, comments, <?xml ...?> declarations,
// the five predefined entities and numeric character references. Text between elements is
// ignored (NCCL's files carry none). DOCTYPE, CDATA and custom entities are refused.
//
// The input may be hostile (LOOM_TOPO_FILE, fuzzing): parsing is iterative (no recursion),
// nesting deeper than kMaxXmlDepth and inputs larger than kMaxXmlBytes are refused, and every
// error is a loom::Error(loomInvalidArgument) naming the source and the line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::topology {

constexpr int kMaxXmlDepth = 64;
constexpr size_t kMaxXmlBytes = 64u << 20;

struct XmlElement {
  std::string name;
  // In document order; names are unique within an element.
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<XmlElement> children;
  int line = 0;  // where the start tag begins (1-based; 0 for elements built in code)

  // nullptr when absent.
  const std::string* attribute(std::string_view attributeName) const;
  std::string attributeOr(std::string_view attributeName, const std::string& fallback) const;
  bool hasAttribute(std::string_view attributeName) const {
    return attribute(attributeName) != nullptr;
  }
  // Replaces the value when the attribute exists, else appends it (keeping order).
  void setAttribute(const std::string& attributeName, const std::string& value);
  XmlElement& addChild(const std::string& childName);
};

// Parses a document with exactly one root element and returns it. Throws
// loom::Error(loomInvalidArgument, "<sourceName>:<line>: <what>") on malformed input.
XmlElement parseXml(std::string_view text, const std::string& sourceName);

// Writes `root` and its children, two spaces per level, one element per line, attributes in
// stored order, values escaped. No XML declaration (NCCL writes none). Ends with a newline.
std::string writeXml(const XmlElement& root);

// Escapes &, <, >, " and control characters for use inside a double-quoted attribute value.
std::string escapeXmlAttribute(std::string_view value);

}  // namespace loom::topology
