// Rendezvous handshake: the attention rank says who it is and what it expects; the FFN
// rank accepts (HelloAck) or refuses (Reject with the reason) before any step runs, so
// a wrong topology, rank or model is a clear error at startup, not garbage tokens later.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/topology.h"

namespace afd::comm {

// What both sides of a connection must agree on.
struct ModelShape {
  /** Decoder layers. */
  uint32_t numLayers = 0;
  /** Hidden size H (f32 rows of H cross the wire). */
  uint32_t hiddenSize = 0;
  /** Routed experts E (router logits are [rows, E]); 0 for dense models. */
  uint32_t numExperts = 0;
  /** Router on the attention side: router logits cross the wire for MoE layers. */
  bool gateOnAttention = false;
  /** [numLayers] true where the layer's FFN half is MoE. */
  std::vector<bool> moeLayers;
};

struct HelloPayload {
  AfdTopology topology;
  /** The attention rank connecting. */
  int attentionRank = 0;
  ModelShape model;
};

std::vector<uint8_t> encodeHello(const HelloPayload& hello);
// Empty string or what is malformed.
std::string decodeHello(const uint8_t* data, size_t bytes, HelloPayload* out);
// Empty when `got` fits this FFN rank, else the reason the FFN rank refuses it.
std::string checkHello(const HelloPayload& got, const AfdTopology& topology, int ffnRank, const ModelShape& model);

}  // namespace afd::comm
