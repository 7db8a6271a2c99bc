// Loopback helpers of the rendezvous test programs: a 3-layer model shape, rank configs
// on 127.0.0.1, an FFN rank serving a fake compute (out = 2 * x + layer) over the real
// link, and attention steps in DBO order that check every returned row.
#pragma once
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "comm/control-payload.h"
#include "comm/rendezvous.h"
#include "comm/topology.h"
#include "testing/programs/harness.h"

namespace afdtest {

using namespace afd::comm;

inline constexpr uint32_t kLayers = 3;
inline constexpr uint32_t kHidden = 8;

inline ModelShape shape() {
  ModelShape m;
  m.numLayers = kLayers;
  m.hiddenSize = kHidden;
  m.numExperts = 4;
  m.moeLayers = {false, true, true};
  return m;
}

inline RendezvousConfig config(AfdTopology topo, int rank, int basePort) {
  RendezvousConfig c;
  c.topology = topo;
  c.rank = rank;
  c.ffnHosts.assign(c.topology.numFfn, "127.0.0.1");
  c.basePort = basePort;
  c.stepDeadlineMs = 2000;
  c.rendezvousTimeoutMs = 5000;
  c.model = shape();
  return c;
}

// Fake FFN compute: out = 2 * x + layer.
inline void fakeFfn(const float* x, float* out, size_t n, uint32_t layer) {
  for (size_t i = 0; i < n; ++i) out[i] = 2 * x[i] + static_cast<float>(layer);
}

// The FFN side's rendezvous in a thread, for tests whose peers are refused or that stop
// it: the CommError that ends it is expected.
inline std::thread acceptInBackground(FfnRendezvous& ffn, std::atomic<bool>& stop) {
  return std::thread([&ffn, &stop] {
    try {
      ffn.acceptPeers(&stop);
    } catch (const CommError&) {
    }
  });
}

// FFN rank loop over the real connector with the fake compute; returns the shutdown reason.
// rendezvous = false: the block has already joined (acceptPeers ran).
inline std::string serveFfn(FfnRendezvous& ffn, std::atomic<bool>& stop, std::atomic<int>* steps, bool rendezvous = true) {
  if (rendezvous) ffn.acceptPeers(&stop);
  ControlPayload payload;
  std::vector<float> in, out;
  std::string by;
  while (ffn.recvStep(&payload, &stop, &by)) {
    for (uint32_t layer = 0; layer < kLayers; ++layer) {
      for (int stage = 0; stage < payload.numStages; ++stage) {
        size_t rows = 0;
        for (int p = 0; p < payload.numPeers; ++p) rows += payload.wireRows(p, stage);
        in.resize(rows * kHidden);
        out.resize(rows * kHidden);
        size_t offset = 0;
        for (int p = 0; p < payload.numPeers; ++p) {
          size_t n = payload.wireRows(p, stage) * kHidden;
          ffn.recv(p, in.data() + offset, n * 4, {TransferKind::kHidden, layer, uint32_t(stage), payload.step}, {});
          offset += n;
        }
        fakeFfn(in.data(), out.data(), in.size(), layer);
        offset = 0;
        for (int p = 0; p < payload.numPeers; ++p) {
          size_t n = payload.wireRows(p, stage) * kHidden;
          ffn.send(p, out.data() + offset, n * 4, {TransferKind::kFfnOutput, layer, uint32_t(stage), payload.step}, {});
          offset += n;
        }
        ffn.synchronize({});
      }
    }
    if (steps) steps->fetch_add(1);
  }
  return by;
}

// One attention step in DBO order: both stages are sent before stage 0 is received.
// Checks each returned row against the fake compute. tokens[s] = 0 sends a placeholder.
inline void attentionStep(AttentionRendezvous& a, std::vector<uint32_t> tokens, float seed) {
  ControlPayload merged;
  a.beginStep(tokens.data(), static_cast<int>(tokens.size()), 0, &merged);
  int stages = merged.numStages;
  tokens.resize(stages, 0);
  std::vector<std::vector<float>> x(stages), y(stages);
  for (int s = 0; s < stages; ++s) {
    size_t rows = tokens[s] ? tokens[s] : 1;
    x[s].resize(rows * kHidden);
    y[s].resize(rows * kHidden);
  }
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    for (int s = 0; s < stages; ++s) {
      for (size_t i = 0; i < x[s].size(); ++i) x[s][i] = seed + s * 100 + layer * 10 + i;
      a.send(0, x[s].data(), x[s].size() * 4, {TransferKind::kHidden, layer, uint32_t(s), merged.step}, {});
    }
    for (int s = 0; s < stages; ++s) {
      a.recv(0, y[s].data(), y[s].size() * 4, {TransferKind::kFfnOutput, layer, uint32_t(s), merged.step}, {});
      for (size_t i = 0; i < y[s].size(); ++i) {
        CHECK_MSG(y[s][i] == 2 * x[s][i] + layer, "row mismatch at layer " << layer << " stage " << s);
      }
    }
    a.synchronize({});
  }
}

// Idle attention rank: answers step calls with empty steps until stop.
inline void idleLoop(AttentionRendezvous& a, std::atomic<bool>& stop, std::atomic<int>& emptySteps) {
  while (!stop.load()) {
    if (!a.pollStepCall(20)) continue;
    attentionStep(a, {0}, 0);
    emptySteps.fetch_add(1);
  }
}

}  // namespace afdtest
