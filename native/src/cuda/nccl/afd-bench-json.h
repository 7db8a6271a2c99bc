// Minimal JSON building for the AFD GPU benchmark report (numbers, strings and nested raw
// JSON; no parsing), with the benches' statistics (cuda/bench-stats.h). Header-only, host code.
#pragma once
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/bench-stats.h"

namespace afd::cuda {

inline std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

class JsonObject {
 public:
  JsonObject& raw(const std::string& key, const std::string& json) {
    os_ << (first_ ? "" : ",") << jsonString(key) << ":" << json;
    first_ = false;
    return *this;
  }
  JsonObject& num(const std::string& key, double v) {
    std::ostringstream s;
    if (std::isfinite(v)) s << v; else s << "null";
    return raw(key, s.str());
  }
  JsonObject& str(const std::string& key, const std::string& v) { return raw(key, jsonString(v)); }
  JsonObject& flag(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
  std::string text() const { return "{" + os_.str() + "}"; }

 private:
  std::ostringstream os_;
  bool first_ = true;
};

class JsonArray {
 public:
  void push(const JsonObject& o) { pushRaw(o.text()); }
  void pushRaw(const std::string& json) {
    os_ << (first_ ? "" : ",") << json;
    first_ = false;
  }
  std::string text() const { return "[" + os_.str() + "]"; }

 private:
  std::ostringstream os_;
  bool first_ = true;
};

}  // namespace afd::cuda
