// Test backend "cpu-graphs": the CPU backend with graph capture emulated, so the engine's
// CUDA-graph step path (runtime/engine/graph-step.cc: padding, keys, packed inputs, replay,
// counters, epoch invalidation) runs and is checked on machines without a GPU. While
// capturing, every op is recorded (with its tensor views, i.e. device addresses) instead
// of run; replay() runs the recorded ops again, reading whatever those addresses hold
// then, as a CUDA graph does. Like the CUDA backend it refuses host transfers, syncs and
// allocations inside a capture, and bumps its allocation epoch on allocate / release.
#pragma once
#include <memory>

#include "core/backend-options.h"
#include "core/backend.h"

namespace afd {

// options.threads: CPU worker threads (0 = all cores); registered as "cpu-graphs" (runtime/registry.h).
std::unique_ptr<Backend> createCaptureEmulationBackend(const BackendOptions& options);

}  // namespace afd
