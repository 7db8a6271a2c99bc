// How an FFN rank joins its expert-parallel group: FFN rank f listens for its group peers
// on basePort + numFfn + f (right after the FFN ranks' attention ports), on its own host,
// and gives a group peer half the step deadline, so an attention rank whose FFN rank waits
// on a silent group peer learns which rank it was before its own deadline passes.
#pragma once
#include "comm/ep-mesh.h"
#include "runtime/afd/connector-options.h"

namespace afd {

// True when the options ask for expert parallelism and the topology has several FFN ranks.
bool expertParallelOn(const AfdConnectorOptions& options, const comm::RendezvousConfig& config);
// What carries the group's exchange: options.epTransport, or when it is unset ("auto")
// peer under connector peer when every FFN rank is on one host, nccl under connector
// nccl, else tcp.
EpTransport epTransportOf(const AfdConnectorOptions& options, const comm::RendezvousConfig& config);
// The group's mesh config for this FFN rank.
comm::EpMeshConfig epMeshConfig(const comm::RendezvousConfig& config, const AfdConnectorOptions& options,
                                const ModelConfig& model);

}  // namespace afd
