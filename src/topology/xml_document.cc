// SPDX-License-Identifier: Apache-2.0
// The XML reader is a single forward scan with an explicit stack of open elements, so a
// hostile input can neither recurse nor read past its end: every access goes through
// Scanner, which checks the position against the size.
#include "topology/xml_document.h"

#include <cstdint>

#include "base/error.h"

namespace loom::topology {

const std::string* XmlElement::attribute(std::string_view attributeName) const {
  for (const auto& [key, value] : attributes) {
    if (key == attributeName) return &value;
  }
  return nullptr;
}

std::string XmlElement::attributeOr(std::string_view attributeName,
                                    const std::string& fallback) const {
  const std::string* value = attribute(attributeName);
  return value ? *value : fallback;
}

void XmlElement::setAttribute(const std::string& attributeName, const std::string& value) {
  for (auto& [key, existing] : attributes) {
    if (key == attributeName) {
      existing = value;
      return;
    }
  }
  attributes.emplace_back(attributeName, value);
}

XmlElement& XmlElement::addChild(const std::string& childName) {
  children.emplace_back();
  children.back().name = childName;
  return children.back();
}

namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool isNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

void appendUtf8(std::string& out, uint32_t codePoint) {
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xc0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xe0 | (codePoint >> 12));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (codePoint >> 18));
    out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  }
}

class Scanner {
 public:
  Scanner(std::string_view text, const std::string& sourceName)
      : text_(text), source_(sourceName) {}

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool startsWith(std::string_view prefix) const {
    return text_.substr(pos_, prefix.size()) == prefix;
  }
  char take() {
    if (atEnd()) fail("unexpected end of input");
    const char c = text_[pos_++];
    if (c == '\n') ++line_;
    return c;
  }
  void skip(size_t count) {
    for (size_t i = 0; i < count; ++i) take();
  }
  void expect(char c, const std::string& context) {
    if (atEnd()) fail(std::string("unexpected end of input, expected '") + c + "' " + context);
    if (peek() != c) {
      fail(std::string("expected '") + c + "' " + context + ", found " + describe(peek()));
    }
    take();
  }
  void skipSpace() {
    while (!atEnd() && isSpace(peek())) take();
  }
  // Skips to just after `terminator`; fails with `what` when the input ends first.
  void skipPast(std::string_view terminator, const char* what) {
    const size_t found = text_.find(terminator, pos_);
    if (found == std::string_view::npos) fail(std::string("unterminated ") + what);
    skip(found + terminator.size() - pos_);
  }
  std::string name(const char* context) {
    if (atEnd() || !isNameStart(peek())) {
      fail(std::string("expected a name ") + context + ", found " +
           (atEnd() ? std::string("end of input") : describe(peek())));
    }
    std::string result;
    while (!atEnd() && isNameChar(peek())) result += take();
    return result;
  }
  // After '&': decodes one entity or character reference and appends it.
  void entity(std::string& out) {
    const size_t semicolon = text_.find(';', pos_);
    if (semicolon == std::string_view::npos || semicolon - pos_ > 12) {
      fail("'&' that does not start an entity (write &amp;)");
    }
    const std::string_view body = text_.substr(pos_, semicolon - pos_);
    if (body == "lt")
      out += '<';
    else if (body == "gt")
      out += '>';
    else if (body == "amp")
      out += '&';
    else if (body == "quot")
      out += '"';
    else if (body == "apos")
      out += '\'';
    else if (body.size() >= 2 && body[0] == '#')
      out += characterReference(body);
    else
      fail("unknown entity '&" + std::string(body) + ";'");
    skip(body.size() + 1);
  }
  int line() const { return line_; }
  [[noreturn]] void fail(const std::string& what) const {
    throwArgument(source_ + ":" + std::to_string(line_) + ": " + what);
  }

 private:
  static std::string describe(char c) {
    if (static_cast<unsigned char>(c) < 0x20) return "control character " + std::to_string(+c);
    return std::string("'") + c + "'";
  }
  std::string characterReference(std::string_view body) const {
    const bool hex = body[1] == 'x' || body[1] == 'X';
    const std::string_view digits = body.substr(hex ? 2 : 1);
    if (digits.empty()) fail("empty character reference");
    uint32_t value = 0;
    for (char c : digits) {
      int digit = -1;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (hex && c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (hex && c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      if (digit < 0) fail("bad character reference '&" + std::string(body) + ";'");
      value = value * (hex ? 16 : 10) + static_cast<uint32_t>(digit);
      if (value > 0x10ffff) fail("character reference out of range");
    }
    if (value == 0 || (value >= 0xd800 && value <= 0xdfff)) {
      fail("character reference to an invalid code point");
    }
    std::string out;
    appendUtf8(out, value);
    return out;
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
};

// Comments, declarations and processing instructions, DOCTYPE/CDATA refused. Returns true
// when something was skipped at the current '<'.
bool skipMarkup(Scanner& in) {
  if (in.startsWith("<!--")) {
    in.skip(4);
    in.skipPast("-->", "comment");
    return true;
  }
  if (in.startsWith("<?")) {
    in.skip(2);
    in.skipPast("?>", "processing instruction");
    return true;
  }
  if (in.startsWith("<![CDATA[")) in.fail("CDATA sections are not supported");
  if (in.startsWith("<!")) in.fail("DOCTYPE and other declarations are not supported");
  return false;
}

std::string attributeValue(Scanner& in) {
  const char quote = in.atEnd() ? '\0' : in.peek();
  if (quote != '"' && quote != '\'') in.fail("attribute value must be quoted");
  in.take();
  std::string value;
  while (true) {
    if (in.atEnd()) in.fail("unterminated attribute value");
    const char c = in.take();
    if (c == quote) break;
    if (c == '<') in.fail("'<' inside an attribute value (write &lt;)");
    // XML forbids NUL, and the writer could only emit it as &#0;, which parsing refuses.
    if (c == '\0') in.fail("NUL character inside an attribute value");
    if (c == '&') {
      in.entity(value);
    } else {
      value += c;
    }
  }
  return value;
}

// Reads "<name attr='v' ...>" or ".../>" after the '<'. Returns true when self-closing.
bool startTag(Scanner& in, XmlElement& element) {
  element.line = in.line();
  element.name = in.name("after '<'");
  while (true) {
    const bool hadSpace = !in.atEnd() && isSpace(in.peek());
    in.skipSpace();
    if (in.atEnd()) in.fail("unterminated start tag <" + element.name + ">");
    if (in.peek() == '>') {
      in.take();
      return false;
    }
    if (in.peek() == '/') {
      in.take();
      in.expect('>', "to close a self-closing tag");
      return true;
    }
    if (!hadSpace) in.fail("attributes must be separated by white space");
    std::string key = in.name("for an attribute");
    if (element.hasAttribute(key)) in.fail("duplicate attribute '" + key + "'");
    in.skipSpace();
    in.expect('=', "after attribute '" + key + "'");
    in.skipSpace();
    element.attributes.emplace_back(std::move(key), attributeValue(in));
  }
}

// Text between tags is ignored, but must still be well formed.
void skipText(Scanner& in) {
  std::string scratch;
  while (!in.atEnd() && in.peek() != '<') {
    if (in.peek() == '&') {
      in.take();
      in.entity(scratch);
      scratch.clear();
    } else {
      in.take();
    }
  }
}

}  // namespace

XmlElement parseXml(std::string_view text, const std::string& sourceName) {
  Scanner in(text, sourceName);
  if (text.size() > kMaxXmlBytes) {
    in.fail("input of " + std::to_string(text.size()) + " bytes is larger than the " +
            std::to_string(kMaxXmlBytes) + " allowed");
  }
  XmlElement root;
  bool haveRoot = false;
  // Open elements from the root down; pointers stay valid because an element's children
  // vector only grows while that element is the innermost open one.
  std::vector<XmlElement*> open;
  while (true) {
    if (open.empty()) {
      in.skipSpace();
      if (in.atEnd()) break;
      if (in.peek() != '<') in.fail("text outside the root element");
    } else {
      skipText(in);
      if (in.atEnd()) in.fail("unexpected end of input inside <" + open.back()->name + ">");
    }
    if (skipMarkup(in)) continue;
    if (in.startsWith("</")) {
      in.skip(2);
      const std::string name = in.name("in an end tag");
      in.skipSpace();
      in.expect('>', "to close end tag </" + name + ">");
      if (open.empty()) in.fail("end tag </" + name + "> without a start tag");
      if (name != open.back()->name) {
        in.fail("end tag </" + name + "> does not match <" + open.back()->name +
                "> opened on line " + std::to_string(open.back()->line));
      }
      open.pop_back();
      continue;
    }
    in.take();  // '<'
    if (open.empty() && haveRoot) in.fail("more than one root element");
    XmlElement* element = nullptr;
    if (open.empty()) {
      element = &root;
      haveRoot = true;
    } else {
      if (static_cast<int>(open.size()) >= kMaxXmlDepth) {
        in.fail("elements nested deeper than " + std::to_string(kMaxXmlDepth) + " levels");
      }
      element = &open.back()->children.emplace_back();
    }
    if (!startTag(in, *element)) open.push_back(element);
  }
  if (!haveRoot) in.fail("no root element");
  return root;
}

std::string escapeXmlAttribute(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "&#" + std::to_string(+c) + ";";  // keeps \n and \t through a round trip
        } else {
          out += c;
        }
    }
  }
  return out;
}

namespace {

// Iterative as well: an element tree built in code may be deep.
void writeElement(const XmlElement& root, std::string& out) {
  struct Frame {
    const XmlElement* element;
    size_t nextChild;
  };
  std::vector<Frame> stack{{&root, 0}};
  auto indent = [&](size_t depth) { out.append(2 * depth, ' '); };
  auto openTag = [&](const XmlElement& element, size_t depth) {
    indent(depth);
    out += "<" + element.name;
    for (const auto& [key, value] : element.attributes) {
      out += " " + key + "=\"" + escapeXmlAttribute(value) + "\"";
    }
    out += element.children.empty() ? "/>\n" : ">\n";
  };
  openTag(root, 0);
  if (root.children.empty()) return;
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (frame.nextChild < frame.element->children.size()) {
      const XmlElement& child = frame.element->children[frame.nextChild++];
      openTag(child, stack.size());
      if (!child.children.empty()) stack.push_back({&child, 0});
    } else {
      indent(stack.size() - 1);
      out += "</" + frame.element->name + ">\n";
      stack.pop_back();
    }
  }
}

}  // namespace

std::string writeXml(const XmlElement& root) {
  std::string out;
  writeElement(root, out);
  return out;
}

}  // namespace loom::topology
