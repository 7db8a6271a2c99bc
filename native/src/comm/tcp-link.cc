#include "comm/tcp-link.h"

#include <algorithm>
#include <vector>

namespace afd::comm {

namespace {
// Frames of one transfer share kind group, layer, stage and step (hidden and router logits are one A->F transfer).
bool sameTransfer(const FrameHeader& a, const FrameHeader& b) {
  const bool aToF = a.kind != FrameKind::kFfnOutput, bToF = b.kind != FrameKind::kFfnOutput;
  return aToF == bToF && a.layer == b.layer && a.stage == b.stage && a.step == b.step;
}
}  // namespace

TcpLink::TcpLink(Socket socket, std::string peer, int sendTimeoutMs, uint64_t clockDomain)
    : socket_(std::move(socket)), peer_(std::move(peer)), sendTimeoutMs_(sendTimeoutMs), clockDomain_(clockDomain) {
  sender_ = std::thread([this] { senderLoop(); });
}

TcpLink::~TcpLink() { close(); }

void TcpLink::fail(const CommError& err) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_) {
    broken_ = true;
    errorKind_ = err.kind();
    error_ = err.what();
  }
  cv_.notify_all();
}

bool TcpLink::broken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

void TcpLink::throwIfBroken() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_) throw CommError(errorKind_, error_);
}

void TcpLink::post(const FrameHeader& header, const void* payload) {
  std::unique_lock<std::mutex> lock(mu_);
  Deadline deadline = Deadline::afterMs(sendTimeoutMs_);
  while (!broken_ && posted_ - written_ >= kRingSize) {
    if (deadline.passed()) {
      lock.unlock();
      fail(CommError(CommErrorKind::kTimeout, "send queue to " + peer_ + " stayed full past the step deadline"));
      lock.lock();
      break;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  if (broken_) throw CommError(errorKind_, error_);
  if (!awaitingReply_) {  // the first frame of this side's turn: the hold ends, the round trip starts
    const auto now = Deadline::Clock::now();
    const uint64_t held = received_ ? static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - lastArrival_).count()) : 0;
    holdUs_ = held > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(held);
    exchangeStart_ = now;
    awaitingReply_ = true;
  }
  Pending item{header, payload};
  item.header.holdUs = holdUs_;
  ring_[posted_ % kRingSize] = item;
  ++posted_;
  cv_.notify_all();
}

void TcpLink::flush(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!broken_ && written_ < posted_) {
    if (deadline.passed()) {
      lock.unlock();
      fail(CommError(CommErrorKind::kTimeout, "timed out sending to " + peer_ + " (the peer stopped reading)"));
      lock.lock();
      break;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(deadline.remainingMs(50)));
  }
  if (broken_) throw CommError(errorKind_, error_);
}

void TcpLink::senderLoop() {
  uint8_t headerBytes[kFrameHeaderBytes];
  for (;;) {
    Pending item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || broken_ || written_ < posted_; });
      if (stopping_ || broken_) return;
      item = ring_[written_ % kRingSize];
      // The freshest one-way time of the peer's last transfer travels back with every frame.
      const bool echo = recvWire_.basis == WireBasis::kOneWay;
      item.header.echoUs = echo ? static_cast<uint32_t>(std::min<uint64_t>(recvWire_.us, kNoEcho - 1)) : kNoEcho;
      item.header.echoLayer = echo ? recvWire_.layer : 0;
      item.header.echoStage = echo ? recvWire_.stage : 0;
    }
    try {
      FrameHeader h = item.header;
      h.payloadChecksum = item.payload && h.byteLength ? payloadChecksum(item.payload, h.byteLength) : 0;
      h.clockDomain = clockDomain_;
      h.sentAtNs = wallClockNs();  // the first byte goes out now
      encodeFrameHeader(h, headerBytes);
      struct iovec iov[2] = {{headerBytes, kFrameHeaderBytes}, {const_cast<void*>(item.payload), h.byteLength}};
      socket_.sendAll(iov, h.byteLength ? 2 : 1, Deadline::afterMs(sendTimeoutMs_), peer_);
    } catch (const CommError& e) {
      fail(e);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++written_;
    cv_.notify_all();
  }
}

void TcpLink::noteReceived(const FrameHeader& h) {
  const uint64_t arrivalNs = wallClockNs();
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Deadline::Clock::now();
  bool exchanged = false;
  if (awaitingReply_) {
    const uint64_t rtt = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - exchangeStart_).count());
    lastExchangeUs_.store(rtt > h.holdUs ? rtt - h.holdUs : 0);
    exchanged = true;
    awaitingReply_ = false;
  }
  lastArrival_ = now;
  received_ = true;
  if (!isTransferFrame(h.kind)) return;
  if (h.clockDomain == clockDomain_ && h.sentAtNs != 0) {
    // One clock: the transfer runs from its first frame's send stamp to this arrival.
    if (!inTransfer_ || !sameTransfer(lastTransfer_, h)) transferSentAtNs_ = h.sentAtNs;
    const uint64_t us = arrivalNs > transferSentAtNs_ ? (arrivalNs - transferSentAtNs_) / 1000 : 0;
    recvWire_ = {us, WireBasis::kOneWay, true, h.layer, h.stage};
    if (h.echoUs != kNoEcho) sendWire_ = {h.echoUs, WireBasis::kOneWay, true, h.echoLayer, h.echoStage};
  } else if (exchanged) {
    // No shared clock: half the round trip that this frame ended, for both directions.
    const uint64_t half = lastExchangeUs_.load() / 2;
    recvWire_ = {half, WireBasis::kRoundTripHalf, true, h.layer, h.stage};
    sendWire_ = recvWire_;
  }
  lastTransfer_ = h;
  inTransfer_ = true;
}

WireTime TcpLink::recvWire() const {
  std::lock_guard<std::mutex> lock(mu_);
  return recvWire_;
}

WireTime TcpLink::sendWire() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sendWire_;
}

FrameHeader TcpLink::recvHeader(Deadline deadline, StopFlag stop, const char* what) {
  throwIfBroken();
  uint8_t bytes[kFrameHeaderBytes];
  FrameHeader h;
  try {
    socket_.recvAll(bytes, kFrameHeaderBytes, deadline, stop, peer_, what);
    std::string problem = decodeFrameHeader(bytes, &h);
    if (!problem.empty()) throw CommError(CommErrorKind::kProtocol, "bad frame from " + peer_ + ": " + problem);
    if (h.kind == FrameKind::kGoodbye) {
      std::string reason(h.byteLength < 4096 ? h.byteLength : 4096, '\0');
      if (!reason.empty()) socket_.recvAll(reason.data(), reason.size(), Deadline::afterMs(1000), nullptr, peer_, "goodbye");
      throw CommError(CommErrorKind::kShutdown, peer_ + " stopped" + (reason.empty() ? "" : ": " + reason));
    }
    if (h.byteLength == 0) noteReceived(h);  // complete already (frames with a payload: recvPayload)
  } catch (const CommError& e) {
    if (e.kind() != CommErrorKind::kStopped) fail(e);
    throw;
  }
  return h;
}

void TcpLink::recvPayload(const FrameHeader& h, void* dst, size_t capacityBytes, Deadline deadline, StopFlag stop,
                          const char* what) {
  try {
    if (h.byteLength > capacityBytes) {
      throw CommError(CommErrorKind::kProtocol, "frame " + std::string(frameKindName(h.kind)) + " from " + peer_ +
                                                    " carries " + std::to_string(h.byteLength) + " bytes but " +
                                                    std::to_string(capacityBytes) + " were expected");
    }
    if (h.byteLength == 0) return;
    socket_.recvAll(dst, h.byteLength, deadline, stop, peer_, what);
    if (payloadChecksum(dst, h.byteLength) != h.payloadChecksum) {
      throw CommError(CommErrorKind::kProtocol, "payload checksum mismatch in " + std::string(what) + " from " + peer_);
    }
    noteReceived(h);
  } catch (const CommError& e) {
    if (e.kind() != CommErrorKind::kStopped) fail(e);
    throw;
  }
}

void TcpLink::recvExpected(FrameKind kind, uint32_t layer, uint32_t stage, uint64_t step, void* dst, size_t bytes,
                           Deadline deadline, StopFlag stop) {
  const char* what = frameKindName(kind);
  FrameHeader h = recvHeader(deadline, stop, what);
  if (h.kind != kind || h.layer != layer || h.stage != stage || h.step != step || h.byteLength != bytes) {
    CommError err(CommErrorKind::kProtocol,
                   "out-of-order frame from " + peer_ + ": expected " + what + " layer " + std::to_string(layer) +
                       " stage " + std::to_string(stage) + " step " + std::to_string(step) + " (" +
                       std::to_string(bytes) + " bytes), got " + frameKindName(h.kind) + " layer " +
                       std::to_string(h.layer) + " stage " + std::to_string(h.stage) + " step " +
                       std::to_string(h.step) + " (" + std::to_string(h.byteLength) +
                       " bytes); the ranks disagree on the step plan");
    fail(err);
    throw err;
  }
  recvPayload(h, dst, bytes, deadline, stop, what);
}

void TcpLink::sendBlob(FrameKind kind, const std::vector<uint8_t>& blob, Deadline deadline) {
  if (blob.size() > kMaxBlobBytes) {
    throw CommError(CommErrorKind::kConfig, std::string(frameKindName(kind)) + " of " + std::to_string(blob.size()) +
                                                " bytes exceeds the " + std::to_string(kMaxBlobBytes) + "-byte limit");
  }
  FrameHeader h;
  h.kind = kind;
  h.byteLength = blob.size();
  send(h, blob.data(), deadline);
}

std::vector<uint8_t> TcpLink::recvBlob(FrameKind kind, Deadline deadline, const char* what, const std::string& hint) {
  FrameHeader h = recvHeader(deadline, nullptr, what);
  if (h.kind != kind || h.byteLength > kMaxBlobBytes) {
    throw CommError(CommErrorKind::kProtocol, peer_ + " sent " + frameKindName(h.kind) + " (" + std::to_string(h.byteLength) +
                                                  " bytes) instead of " + what + " (at most " +
                                                  std::to_string(kMaxBlobBytes) + " bytes); " + hint);
  }
  std::vector<uint8_t> blob(h.byteLength);
  recvPayload(h, blob.data(), blob.size(), deadline, nullptr, what);
  return blob;
}

void TcpLink::goodbye(const std::string& reason, int timeoutMs) {
  if (!broken()) {
    try {
      FrameHeader h;
      h.kind = FrameKind::kGoodbye;
      h.byteLength = reason.size();
      send(h, reason.data(), Deadline::afterMs(timeoutMs));
    } catch (const CommError&) {
      // best effort: the peer may already be gone
    }
  }
  close();
}

void TcpLink::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  socket_.shutdownBoth();
  if (sender_.joinable()) sender_.join();
  socket_.close();
}

}  // namespace afd::comm
