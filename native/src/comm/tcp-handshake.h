// Rendezvous handshake: the attention rank says who it is and what it expects; the FFN
// rank accepts (HelloAck) or refuses (Reject with the reason) before any step runs, so
// a wrong topology, rank or model is a clear error at startup, not garbage tokens later.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/deadline.h"
#include "comm/frame.h"
#include "comm/tcp-socket.h"
#include "comm/topology.h"

namespace afd::comm {

// What both sides of a connection must agree on.
struct ModelShape {
  /** Decoder layers. */
  uint32_t numLayers = 0;
  /** Hidden size H (rows of H activations cross the wire). */
  uint32_t hiddenSize = 0;
  /** Bytes per activation element on the wire: 4 (f32, CPU backend) or 2 (bf16, CUDA). */
  uint32_t activationBytes = 4;
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
  /**
   * Identity of one start of the topology (the agent draws a fresh one per launch and
   * restart and gives it to every rank of that start; "" when started by hand). An FFN
   * rank admits only peers with its own id, so a process of an earlier start (a stale
   * reconnect loop, a rank still shutting down) or of another launch on the same ports
   * can neither join the new block nor send it the shutdown flag. At most 256 bytes.
   */
  std::string rendezvousId;
};

/** Longest rendezvous id a hello carries. */
constexpr size_t kMaxRendezvousIdBytes = 256;

std::vector<uint8_t> encodeHello(const HelloPayload& hello);
// Empty string or what is malformed.
std::string decodeHello(const uint8_t* data, size_t bytes, HelloPayload* out);
// A handshake frame read on a freshly accepted socket, before a link exists.
struct HandshakeFrame {
  /** A frame of the wanted kind arrived; its payload is read and its checksum holds. */
  bool ok = false;
  /**
   * An AFD peer of another build (wire version): refuse it with this reason (its decoder
   * then names both versions) instead of dropping it, so it fails at once, not at the
   * rendezvous timeout, and never steps with a payload layout it reads differently.
   */
  std::string refusal;
};
// Reads one frame of `kind` (payload at most maxBytes) on `socket`; who: how errors name
// the other side, self: how a refusal names this side ("FFN rank 0"). Neither ok nor a
// refusal: not an AFD peer of this kind (drop it). Throws CommError (stop, timeout, EOF).
HandshakeFrame readHandshakeFrame(Socket& socket, FrameKind kind, size_t maxBytes, Deadline deadline, StopFlag stop,
                                  const std::string& who, const std::string& self, std::vector<uint8_t>* payload);

// Empty when `got` fits this FFN rank, else the reason the FFN rank refuses it.
std::string checkHello(const HelloPayload& got, const AfdTopology& topology, int ffnRank, const ModelShape& model,
                       const std::string& rendezvousId);

}  // namespace afd::comm
