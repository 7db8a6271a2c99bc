// What this addon build can do: probe() (the build, the machine's devices and libraries)
// and connectors() (each connector's facts and whether this build has it).
#pragma once
#include <napi.h>

namespace afd::binding {
Napi::Value Probe(const Napi::CallbackInfo& info);
// [{ name, memory: 'host' | 'device', oneHostOnly, needsCuda, graphCapturable, available }]
// in the order of runtime/connectors.h; the TypeScript connector table is checked against it.
Napi::Value Connectors(const Napi::CallbackInfo& info);
}  // namespace afd::binding
