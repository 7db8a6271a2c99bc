// runOp: runs one Backend op on given inputs (the backend conformance suite and op-level
// tests). Not a hot path: buffers are allocated and copied per call.
#pragma once
#include <napi.h>

namespace afd::binding {
// runOp(backend: {name, threads, deviceIndex}, op: string, inputs: {name: {dtype, shape,
// data}}, params: {name: number | boolean}) -> {outputName: Float32Array | Int32Array}
Napi::Value RunOp(const Napi::CallbackInfo& info);
}  // namespace afd::binding
