// The data plane: per layer and stage, attention -> FFN hidden states (and router logits
// when the gate runs on attention), FFN -> attention outputs. One interface for every
// transport:
//  - TCP (rendezvous.h): host memory; send() queues the frame for a sender thread,
//    recv() blocks until the bytes are in `dst` (or the step deadline passes).
//  - NCCL (cuda/nccl/nccl-data-plane.h, built by runtime/afd/device-plane.h): device
//    memory; send()/recv() enqueue ncclSend/ncclRecv on `stream` (null = the engine's
//    stream; capturable in a CUDA graph); data is ready after the stream work.
//  - peer (cuda/ipc/ipc-data-plane.h): device memory of GPUs on one host through CUDA
//    IPC; the sender's kernel writes into the receiver's inbox, recv waits on a device
//    flag and copies it out, all on `stream` (capturable as well).
// Byte counts are always known to both sides ahead of time (from the control payload),
// as NCCL requires; TCP additionally checks them in every frame header.
#pragma once
#include <cstddef>
#include <cstdint>

#include "comm/deadline.h"
#include "comm/wire-time.h"

namespace afd::comm {

// A device stream handle (cudaStream_t for NCCL); nullptr = the default stream. TCP ignores it.
struct CommStream {
  void* handle = nullptr;
};

enum class MemoryKind { kHost, kDevice };

// What a transfer carries; both sides must agree on (kind, layer, stage, step, bytes).
enum class TransferKind : uint8_t { kHidden, kRouterLogits, kFfnOutput };

struct TransferTag {
  /** Payload kind. */
  TransferKind kind = TransferKind::kHidden;
  /** Decoder layer index. */
  uint32_t layer = 0;
  /** DBO stage index (0 or 1). */
  uint32_t stage = 0;
  /** Block step number (from the control payload). */
  uint64_t step = 0;
};

class DataPlane {
 public:
  virtual ~DataPlane() = default;
  // Peers this rank exchanges data with: 1 on attention (its FFN rank), the block size
  // on FFN (peer index = position in the block).
  virtual int numPeers() const = 0;
  // Where send()/recv() buffers live: host memory (TCP) or device memory of the
  // engine's backend (NCCL, peer; then `stream` = null means the engine's own stream).
  virtual MemoryKind memoryKind() const { return MemoryKind::kHost; }
  // Buffers used for transfers are registered once, up front (NCCL user-buffer
  // registration / graph capture need stable addresses). No-op for TCP.
  virtual void registerBuffer(const void* /*ptr*/, size_t /*bytes*/, MemoryKind /*kind*/) {}
  // Starts sending `bytes` from src to a peer. src stays valid and unchanged until
  // synchronize() returns.
  virtual void send(int peer, const void* src, size_t bytes, const TransferTag& tag, CommStream stream) = 0;
  // Receives exactly `bytes` from a peer into dst (TCP: complete on return; NCCL:
  // complete when the stream reaches this point).
  virtual void recv(int peer, void* dst, size_t bytes, const TransferTag& tag, CommStream stream) = 0;
  // Brackets several send/recv calls that must progress together (ncclGroupStart/End).
  virtual void groupStart() {}
  virtual void groupEnd() {}
  // Waits until every send posted so far has left this rank; throws on a lost peer.
  virtual void synchronize(CommStream stream) = 0;
  // Device planes: a flag raised when the peer's control connection closes (its process
  // died); synchronize() then fails at once instead of waiting out the step deadline.
  virtual void setPeerLostFlag(StopFlag /*flag*/) {}
  // Time of a transfer to (send) / from a peer and how it was measured (wire-time.h):
  // TCP: one-way on one host, half the round trip across hosts, tagged with the transfer's
  // layer and stage; device planes: the operation's span on the stream (untagged: the most
  // recent one). Sampled into the stats.
  virtual WireTime wireTime(int /*peer*/, bool /*send*/) const { return {}; }
  // Device planes: record timing events around the next transfers (sampled steps only,
  // they cost event records); wireTime reads them. Host planes time every transfer.
  virtual void setSampling(bool /*on*/) {}
};

}  // namespace afd::comm
