// The one binding conversion of the configuration: native reads the rank config (the
// shared schema's object, shared/src/config/rankConfig.ts) here and nowhere else. The
// object was validated and defaulted by the schema in TypeScript; this is a last guard
// that names any field of the wrong type or range, e.g.
// "new FfnServer(engine, config): config.afd.port must be an integer in [0, 65535]".
#pragma once
#include <napi.h>

#include "runtime/afd/connector-options.h"

namespace afd::binding {

// How an attention or FFN rank joins its topology, from config.afd (role, rank, topology,
// hosts, ports, rendezvous, connector, expert parallelism, CUDA graph policy) and
// config.serving.maxNumBatchedTokens (what sizes device buffers: at least the largest
// graph bucket, since a graph step pads a stage to its bucket). The debugging overrides
// of core/debug-env.h win over the config. `what` names the caller in errors.
AfdConnectorOptions connectorOptionsOf(const Napi::Value& config, const char* what);

}  // namespace afd::binding
