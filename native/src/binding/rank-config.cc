#include "binding/rank-config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/debug-env.h"
#include "runtime/connectors.h"

namespace afd::binding {
namespace {

// Reads the fields of one object of the config, each error naming its dotted path.
class ConfigReader {
 public:
  ConfigReader(Napi::Value value, std::string path, const char* what) : path_(std::move(path)), what_(what) {
    if (!value.IsObject()) fail(path_, "must be an object (pass a rank config resolved by @afd/shared's rankConfigSchema)");
    o_ = value.As<Napi::Object>();
  }

  ConfigReader object(const char* key) const { return ConfigReader(o_.Get(key), at(key), what_); }

  int integer(const char* key, double min, double max) const {
    const Napi::Value v = o_.Get(key);
    const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : std::nan("");
    if (!(d >= min && d <= max) || d != std::floor(d)) {
      fail(at(key), "must be an integer in [" + std::to_string(static_cast<long long>(min)) + ", " +
                        std::to_string(static_cast<long long>(max)) + "]");
    }
    return static_cast<int>(d);
  }

  std::string string(const char* key) const {
    const Napi::Value v = o_.Get(key);
    if (!v.IsString()) fail(at(key), "must be a string");
    return v.As<Napi::String>().Utf8Value();
  }

  bool boolean(const char* key) const {
    const Napi::Value v = o_.Get(key);
    if (!v.IsBoolean()) fail(at(key), "must be a boolean");
    return v.As<Napi::Boolean>().Value();
  }

  std::vector<std::string> strings(const char* key) const {
    const Napi::Value v = o_.Get(key);
    if (!v.IsArray()) fail(at(key), "must be an array of strings");
    const Napi::Array a = v.As<Napi::Array>();
    std::vector<std::string> out;
    for (uint32_t i = 0; i < a.Length(); ++i) {
      if (!a.Get(i).IsString()) fail(at(key), "must be an array of strings");
      out.push_back(a.Get(i).As<Napi::String>().Utf8Value());
    }
    return out;
  }

  std::vector<int> integers(const char* key, double min, double max) const {
    const Napi::Value v = o_.Get(key);
    if (!v.IsArray()) fail(at(key), "must be an array of integers");
    const Napi::Array a = v.As<Napi::Array>();
    std::vector<int> out;
    for (uint32_t i = 0; i < a.Length(); ++i) {
      const Napi::Value e = a.Get(i);
      const double d = e.IsNumber() ? e.As<Napi::Number>().DoubleValue() : std::nan("");
      if (!(d >= min && d <= max) || d != std::floor(d)) fail(at(key), "must be an array of integers");
      out.push_back(static_cast<int>(d));
    }
    return out;
  }

  // One of `values`, or an error listing them.
  std::string choice(const char* key, const std::vector<std::string>& values) const {
    const std::string s = string(key);
    std::string names;
    for (const std::string& v : values) {
      if (s == v) return s;
      names += (names.empty() ? "\"" : ", \"") + v + "\"";
    }
    fail(at(key), "must be one of " + names + " (got \"" + s + "\")");
  }

  // The one place an option string becomes a connector or transport enum
  // (runtime/connectors.h): one of `kinds` by name, or "auto" (nullopt: the runtime
  // picks) where allowAuto.
  template <typename Kind, size_t N>
  std::optional<Kind> kind(const char* key, const std::array<Kind, N>& kinds, bool allowAuto) const {
    std::vector<std::string> names;
    if (allowAuto) names.push_back("auto");
    for (Kind k : kinds) names.push_back(nameOf(k));
    const std::string s = choice(key, names);
    for (Kind k : kinds) {
      if (s == nameOf(k)) return k;
    }
    return std::nullopt;
  }

 private:
  std::string at(const char* key) const { return path_ + "." + key; }
  [[noreturn]] void fail(const std::string& path, const std::string& why) const {
    throw std::invalid_argument(std::string(what_) + ": " + path + " " + why);
  }

  Napi::Object o_;
  std::string path_;
  const char* what_;
};

}  // namespace

AfdConnectorOptions connectorOptionsOf(const Napi::Value& config, const char* what) {
  try {
    const ConfigReader root(config, "config", what);
    const ConfigReader afd = root.object("afd");
    AfdConnectorOptions out;
    // A resolved Topology (shared/src/topology/spec.ts): the C++ side reads its rank counts.
    const ConfigReader topology = afd.object("topology");
    out.topology.numAttention = topology.object("attention").integer("ranks", 1, 1024);
    out.topology.numFfn = topology.object("ffn").integer("ranks", 1, 1024);
    out.rank = afd.integer("rank", 0, 1 << 20);
    out.host = afd.string("host");
    out.ffnHosts = afd.strings("ffnHosts");
    out.listenHost = afd.string("listenHost");
    out.basePort = afd.integer("port", 0, 65535);
    out.stepDeadlineMs = afd.integer("stepDeadlineMs", 1, 3600000);
    out.rendezvousTimeoutMs = afd.integer("rendezvousTimeoutMs", 0, 1 << 30);
    out.rendezvousId = afd.string("rendezvousId");
    out.connector = *afd.kind("connector", kConnectorKinds, false);
    out.expertParallel = afd.boolean("enableExpertParallel");
    out.epTransport = afd.kind("epTransport", kEpTransports, true);
    const ConfigReader graphs = afd.object("cudaGraph");
    // An FFN rank whose own policy is off serves every step eagerly (the attention side ignores it).
    out.ffnGraphs = graphs.choice("policy", {"off", "decode-only"}) != "off";
    const std::vector<int> buckets = graphs.integers("batchBuckets", 1, 65536);
    const int maxBucket = buckets.empty() ? 1 : *std::max_element(buckets.begin(), buckets.end());
    out.maxStepTokens = std::max(root.object("serving").integer("maxNumBatchedTokens", 1, 1 << 24), maxBucket);
    // The debugging overrides of the environment win over the config.
    const DebugEnv& debug = debugEnv();
    if (debug.graphsOff) out.ffnGraphs = false;
    if (debug.faultFfnLayerDelayUs) out.faultLayerDelayUs = *debug.faultFfnLayerDelayUs;
    return out;
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Napi::Error::New(config.Env(), e.what());
  }
}

}  // namespace afd::binding
