// Wire frame of the TCP connector: a fixed 48-byte little-endian header followed by
// `byteLength` payload bytes. The header carries its own checksum and a checksum of the
// payload, so a desynchronised stream or a foreign peer is caught at the first frame.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace afd::comm {

// "AFD1" read as a little-endian u32.
constexpr uint32_t kFrameMagic = 0x31444641u;
// Bumped when the frame, handshake or control payload layout changes; peers must match
// exactly. 2: the control payload moved to the layout of native/src/testing/controlPayload.ts
// (flags at byte 6, numStages at 8). Version 1 builds used the old layout, and a rendezvous
// of a v1 and a v2 process (an addon rebuilt between two role starts) passed the
// handshake, then failed the first step with "control payload has 0 stages".
// 3: the hello carries the rendezvous id (tcp-handshake.h).
// 4: the expert-parallel FFN group's frames (kEpHello .. kEpCombine, comm/ep-mesh.h).
// 5: the header carries holdUs (bytes 44..48, covered by the header checksum).
// 6: the header grows to 80 bytes: the send stamp, the sender's clock domain and the echo
// of the last transfer it received (per-direction wire times, TcpLink).
constexpr uint16_t kWireVersion = 6;
constexpr size_t kFrameHeaderBytes = 80;
// Magic and version lead every header of every version: a handshake reads these first,
// so a peer of another version is refused by name whatever its header size.
constexpr size_t kFramePrefixBytes = 8;
// echoUs when the sender has no one-way time to report.
constexpr uint32_t kNoEcho = UINT32_MAX;
// Upper bound of one payload (guards against a corrupt length allocating or waiting forever).
constexpr uint64_t kMaxFramePayloadBytes = uint64_t{1} << 34;

enum class FrameKind : uint16_t {
  kHello = 1,         // A->F: handshake (HelloPayload)
  kHelloAck = 2,      // F->A: handshake accepted
  kReject = 3,        // F->A: handshake refused; payload = UTF-8 reason
  kStepRequest = 4,   // A->F: this peer's control payload for the next step (own counts, flags)
  kStepCall = 5,      // F->A: a block peer started step `step`; join it (an idle peer sends empty counts)
  kStepGo = 6,        // F->A: merged control payload of the whole block; the layer loop starts
  kHidden = 7,        // A->F: hidden states of one layer and stage, [rows, H] f32
  kRouterLogits = 8,  // A->F: router logits of one MoE layer and stage, [rows, E] f32
  kFfnOutput = 9,     // F->A: FFN output of one layer and stage, [rows, H] f32
  kGoodbye = 10,      // either way: the sender stops; payload = UTF-8 reason
  kBootstrap = 11,    // F->A after the handshake: device data-plane bootstrap blob (NCCL unique id, peer-memory handle)
  kBootstrapReply = 12,  // A->F after kBootstrap, connector peer only: the attention rank's peer-memory handle
  // Expert parallelism, between the FFN ranks of one group (comm/ep-mesh.h):
  kEpHello = 13,     // F->F: mesh handshake of a higher FFN rank (EpHello); answered kHelloAck or kReject
  kEpStep = 14,      // F->F: this rank starts group step `step` (EpStepStart: stages, flags; shutdown carries a reason)
  kEpDispatch = 15,  // F->F: token-expert pairs for the owner's experts: [n] i32 expert ids, then [n, H] rows
  kEpCombine = 16,   // F->F: the owner's expert outputs for those pairs, [n, H], back to their source rank
  kEpBootstrap = 17,  // F->F after the mesh formed: a device exchange's bootstrap blob (ep/device-exchange.h)
};
// The last frame kind (decoders refuse larger ones).
constexpr FrameKind kLastFrameKind = FrameKind::kEpBootstrap;

const char* frameKindName(FrameKind kind);

struct FrameHeader {
  /** Always kFrameMagic. */
  uint32_t magic = kFrameMagic;
  /** Always kWireVersion. */
  uint16_t version = kWireVersion;
  /** What the payload is. */
  FrameKind kind = FrameKind::kHello;
  /** Decoder layer index (data frames); 0 otherwise. */
  uint32_t layer = 0;
  /** DBO stage index (data frames); 0 otherwise. */
  uint32_t stage = 0;
  /** Block step number the frame belongs to (control and data frames). */
  uint64_t step = 0;
  /** Payload length in bytes. */
  uint64_t byteLength = 0;
  /** payloadChecksum() of the payload bytes. */
  uint64_t payloadChecksum = 0;
  /**
   * How long the sender held the exchange: microseconds from the last frame it received
   * on this connection to the first frame it sent after it (saturating). The other side
   * subtracts it from its round trip to get the time on the wire (TcpLink).
   */
  uint32_t holdUs = 0;
  /** CLOCK_REALTIME nanoseconds when the sender started writing this frame (0 = not stamped). */
  uint64_t sentAtNs = 0;
  /** The sender's clock domain (hostClockDomain()): equal on both ends = one clock, sentAtNs comparable. */
  uint64_t clockDomain = 0;
  /**
   * One-way time, microseconds, of the last data transfer the sender received on this
   * connection (from its first frame's send stamp to its last frame's arrival); kNoEcho
   * when it has none or the two ends share no clock. Its transfer is (echoLayer, echoStage).
   */
  uint32_t echoUs = kNoEcho;
  /** Layer of the transfer echoUs timed. */
  uint32_t echoLayer = 0;
  /** Stage of the transfer echoUs timed. */
  uint32_t echoStage = 0;
};
// True for the frames of the data plane (hidden states, router logits, FFN outputs).
bool isTransferFrame(FrameKind kind);

// Fast 64-bit checksum of a byte range (word-wise multiply-xor; not cryptographic).
uint64_t payloadChecksum(const void* data, size_t bytes);

// Writes the header (with its header checksum) into out[kFrameHeaderBytes].
void encodeFrameHeader(const FrameHeader& h, uint8_t* out);
// Parses and checks magic, version, header checksum and length bound; returns an empty
// string when valid, else what is wrong (the caller adds the peer name).
std::string decodeFrameHeader(const uint8_t* in, FrameHeader* h);

}  // namespace afd::comm
