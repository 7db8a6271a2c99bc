#include "binding/probe-binding.h"

#include "core/probe.h"
#include "runtime/registry.h"

namespace afd::binding {
namespace {

Napi::Object libraryToJs(Napi::Env env, const LibraryInfo& lib) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("loaded", lib.loaded);
  o.Set("soname", lib.soname);
  o.Set("version", lib.version);
  o.Set("error", lib.error);
  return o;
}

}  // namespace

Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ProbeResult r = probe();
  Napi::Object o = Napi::Object::New(env);
  o.Set("version", r.version);
  o.Set("variant", r.variant);
  const std::vector<std::string> names = registry().backendNames();
  Napi::Array backends = Napi::Array::New(env, names.size());
  for (size_t i = 0; i < names.size(); ++i) backends.Set(static_cast<uint32_t>(i), names[i]);
  o.Set("backends", backends);
  o.Set("cudaRuntimeVersion", r.cudaRuntimeVersion);
  o.Set("cudaDriverVersion", r.cudaDriverVersion);
  o.Set("cudaError", r.cudaError);
  Napi::Array devices = Napi::Array::New(env, r.devices.size());
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceInfo& d = r.devices[i];
    Napi::Object dev = Napi::Object::New(env);
    dev.Set("index", d.index);
    dev.Set("name", d.name);
    dev.Set("totalMemoryBytes", static_cast<double>(d.totalMemoryBytes));
    dev.Set("freeMemoryBytes", static_cast<double>(d.freeMemoryBytes));
    dev.Set("computeCapability", std::to_string(d.computeMajor) + "." + std::to_string(d.computeMinor));
    dev.Set("multiProcessors", d.multiProcessors);
    devices.Set(static_cast<uint32_t>(i), dev);
  }
  o.Set("devices", devices);
  o.Set("cublas", libraryToJs(env, r.cublas));
  o.Set("cublasLt", libraryToJs(env, r.cublasLt));
  o.Set("nccl", libraryToJs(env, r.nccl));
  return o;
}

Napi::Value Connectors(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<ConnectorEntry> entries = connectorEntries();
  Napi::Array out = Napi::Array::New(env, entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const TransportFacts& f = entries[i].facts;
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", f.name);
    o.Set("memory", f.memory == MemoryKind::Device ? "device" : "host");
    o.Set("oneHostOnly", f.oneHostOnly);
    o.Set("needsCuda", f.needsCuda);
    o.Set("graphCapturable", f.graphCapturable);
    o.Set("available", entries[i].available);
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

}  // namespace afd::binding
