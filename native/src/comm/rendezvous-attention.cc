// The rendezvous link's shared parts (frame kinds, config checks) and its attention
// side (dial, handshake, control plane, tcp data plane); the FFN side is in rendezvous-ffn.cc.
#include "comm/rendezvous.h"

namespace afd::comm {

FrameKind transferFrameKind(TransferKind kind) {
  switch (kind) {
    case TransferKind::kHidden: return FrameKind::kHidden;
    case TransferKind::kRouterLogits: return FrameKind::kRouterLogits;
    case TransferKind::kFfnOutput: return FrameKind::kFfnOutput;
  }
  return FrameKind::kHidden;
}

FrameHeader transferHeader(const TransferTag& tag, size_t bytes) {
  FrameHeader h;
  h.kind = transferFrameKind(tag.kind);
  h.layer = tag.layer;
  h.stage = tag.stage;
  h.step = tag.step;
  h.byteLength = bytes;
  return h;
}

Deadline rendezvousDeadline(int timeoutMs) { return timeoutMs > 0 ? Deadline::afterMs(timeoutMs) : Deadline::never(); }


void RendezvousConfig::validate(bool ffnRole) const {
  topology.validate();
  int count = ffnRole ? topology.numFfn : topology.numAttention;
  if (rank < 0 || rank >= count) {
    throw CommError(CommErrorKind::kConfig, std::string(ffnRole ? "ffn" : "attention") + " rank " +
                                                std::to_string(rank) + " does not exist in " + topology.name() +
                                                " (valid: 0.." + std::to_string(count - 1) + ")");
  }
  if (static_cast<int>(ffnHosts.size()) != topology.numFfn) {
    throw CommError(CommErrorKind::kConfig, "got " + std::to_string(ffnHosts.size()) + " FFN hosts but " +
                                                topology.name() + " has " + std::to_string(topology.numFfn) +
                                                " FFN ranks; give one host per FFN rank");
  }
  for (const std::string& h : ffnHosts) {
    if (h.empty()) throw CommError(CommErrorKind::kConfig, "an FFN host is empty; give a host name or IP per FFN rank");
  }
  if (basePort < 0 || basePort + topology.numFfn - 1 > 65535 || (basePort == 0 && topology.numFfn > 1)) {
    throw CommError(CommErrorKind::kConfig, "base port " + std::to_string(basePort) + " is invalid for " +
                                                std::to_string(topology.numFfn) +
                                                " FFN ranks (they listen on port..port+y-1, at most 65535)");
  }
  if (rendezvousId.size() > kMaxRendezvousIdBytes) {
    throw CommError(CommErrorKind::kConfig, "rendezvous id of " + std::to_string(rendezvousId.size()) +
                                                " bytes is too long (at most " + std::to_string(kMaxRendezvousIdBytes) + ")");
  }
  if (stepDeadlineMs < 1) throw CommError(CommErrorKind::kConfig, "stepDeadlineMs must be at least 1");
  if (model.numLayers == 0 || model.hiddenSize == 0) {
    throw CommError(CommErrorKind::kConfig, "connector needs the model shape (layers and hidden size)");
  }
}

AttentionRendezvous::AttentionRendezvous(RendezvousConfig config) : config_(std::move(config)) {
  config_.validate(false);
  ffnRank_ = config_.topology.ffnRankOf(config_.rank);
  peerIndex_ = config_.topology.peerIndexOf(config_.rank);
  host_ = config_.ffnHosts[ffnRank_];
  port_ = config_.basePort + ffnRank_;
  peerName_ = "FFN rank " + std::to_string(ffnRank_) + " at " + formatAddress(host_, port_);
  request_.reset(1);
}

AttentionRendezvous::~AttentionRendezvous() { close(); }

void AttentionRendezvous::close() {
  if (link_) link_->close();
}

void AttentionRendezvous::adopt(std::unique_ptr<TcpLink> link) {
  if (link_) link_->close();
  link_ = std::move(link);
  nextStep_ = 0;
}

std::string AttentionRendezvous::lostReason() const {
  if (!link_) return "not connected to " + peerName_;
  try {
    link_->throwIfBroken();
  } catch (const CommError& e) {
    return e.what();
  }
  return {};
}

std::unique_ptr<TcpLink> AttentionRendezvous::dial(StopFlag stop, int timeoutMs) const {
  Deadline deadline = rendezvousDeadline(timeoutMs);
  Socket socket = connectWithRetry(host_, port_, deadline, stop, peerName_);
  auto link = std::make_unique<TcpLink>(std::move(socket), peerName_, config_.stepDeadlineMs);
  HelloPayload hello;
  hello.topology = config_.topology;
  hello.attentionRank = config_.rank;
  hello.model = config_.model;
  hello.rendezvousId = config_.rendezvousId;
  std::vector<uint8_t> bytes = encodeHello(hello);
  FrameHeader h;
  h.kind = FrameKind::kHello;
  h.byteLength = bytes.size();
  Deadline handshake = Deadline::afterMs(config_.stepDeadlineMs);
  link->send(h, bytes.data(), handshake);
  FrameHeader reply;
  try {
    // The FFN rank acknowledges once its whole block has joined: wait up to the rendezvous deadline.
    reply = link->recvHeader(deadline, stop, "the handshake reply (the FFN rank acknowledges once its whole block joined)");
  } catch (const CommError& e) {
    if (e.kind() != CommErrorKind::kTimeout && e.kind() != CommErrorKind::kProtocol &&
        e.kind() != CommErrorKind::kPeerClosed) {
      throw;
    }
    throw CommError(e.kind(), std::string(e.what()) + "; is " + formatAddress(host_, port_) +
                                  " really FFN rank " + std::to_string(ffnRank_) + " (check --afd-port / --ffn-hosts)?");
  }
  if (reply.kind == FrameKind::kReject) {
    std::string reason(reply.byteLength < 65536 ? reply.byteLength : 65536, '\0');
    link->recvPayload(reply, reason.data(), reason.size(), handshake, stop, "the rejection reason");
    link->close();
    throw CommError(CommErrorKind::kConfig, peerName_ + " refused attention rank " + std::to_string(config_.rank) +
                                                ": " + reason);
  }
  if (reply.kind != FrameKind::kHelloAck) {
    throw CommError(CommErrorKind::kProtocol, peerName_ + " answered the handshake with " +
                                                  frameKindName(reply.kind) + " instead of hello-ack");
  }
  return link;
}

std::vector<uint8_t> AttentionRendezvous::recvBootstrap(TcpLink& link, int timeoutMs) {
  return link.recvBlob(FrameKind::kBootstrap, Deadline::afterMs(timeoutMs),
                       "the data-plane bootstrap (an FFN rank sends it only when it runs connector nccl or peer: "
                       "start every rank with the same --connector)",
                       "do both sides use the same connector?");
}

void AttentionRendezvous::sendBootstrapReply(TcpLink& link, const std::vector<uint8_t>& blob, int timeoutMs) {
  link.sendBlob(FrameKind::kBootstrapReply, blob, Deadline::afterMs(timeoutMs));
}

void AttentionRendezvous::beginStep(const uint32_t* stageTokens, int numStages, uint32_t flags,
                                      ControlPayload* merged) {
  if (!link_) throw CommError(CommErrorKind::kConfig, "not connected to " + peerName_ + " (call connect first)");
  if (numStages < 1 || numStages > kMaxStages) {
    throw CommError(CommErrorKind::kConfig, "a step has 1 or 2 stages, got " + std::to_string(numStages));
  }
  request_.step = nextStep_;
  request_.flags = flags;
  request_.numStages = numStages;
  for (int s = 0; s < kMaxStages; ++s) request_.setTokens(0, s, s < numStages ? stageTokens[s] : 0);
  encodeControlPayload(request_, &scratch_);
  FrameHeader h;
  h.kind = FrameKind::kStepRequest;
  h.step = nextStep_;
  h.byteLength = scratch_.size();
  Deadline deadline = Deadline::afterMs(config_.stepDeadlineMs);
  link_->send(h, scratch_.data(), deadline);
  if (flags & kFlagShutdown) return;
  size_t capacity = maxControlPayloadBytes(config_.topology.blockOf(ffnRank_).size);
  scratch_.resize(capacity);
  for (;;) {
    FrameHeader reply = link_->recvHeader(deadline, nullptr, "the step announcement (step-go)");
    if (reply.kind == FrameKind::kStepCall && reply.step == nextStep_ && reply.byteLength == 0) continue;
    if (reply.kind == FrameKind::kBootstrap) {
      throw CommError(CommErrorKind::kConfig, peerName_ + " runs a device connector (nccl or peer: it sent its data-plane "
                                                          "bootstrap) but this rank runs tcp; start every rank with the same --connector");
    }
    if (reply.kind != FrameKind::kStepGo || reply.step != nextStep_) {
      throw CommError(CommErrorKind::kProtocol, peerName_ + " sent " + frameKindName(reply.kind) + " for step " +
                                                    std::to_string(reply.step) + " while step-go for step " +
                                                    std::to_string(nextStep_) + " was expected");
    }
    link_->recvPayload(reply, scratch_.data(), capacity, deadline, nullptr, "the step announcement");
    std::string problem = decodeControlPayload(scratch_.data(), reply.byteLength, merged);
    if (!problem.empty() || merged->step != nextStep_) {
      throw CommError(CommErrorKind::kProtocol, "bad control payload from " + peerName_ + ": " +
                                                    (problem.empty() ? "wrong step" : problem));
    }
    ++nextStep_;
    return;
  }
}

std::string AttentionRendezvous::pendingGoodbye() {
  if (!link_ || !link_->readable(0)) return {};
  try {
    link_->recvHeader(Deadline::afterMs(100), nullptr, "a goodbye");
  } catch (const CommError& e) {
    if (e.kind() == CommErrorKind::kShutdown) return e.what();
  }
  return {};
}

bool AttentionRendezvous::pollStepCall(int timeoutMs) {
  if (!link_) throw CommError(CommErrorKind::kConfig, "not connected to " + peerName_);
  link_->throwIfBroken();
  if (!link_->readable(timeoutMs)) return false;
  FrameHeader h = link_->recvHeader(Deadline::afterMs(config_.stepDeadlineMs), nullptr, "a step call");
  if (h.kind != FrameKind::kStepCall || h.step != nextStep_ || h.byteLength != 0) {
    throw CommError(CommErrorKind::kProtocol, peerName_ + " sent " + frameKindName(h.kind) + " for step " +
                                                  std::to_string(h.step) + " to an idle rank at step " +
                                                  std::to_string(nextStep_));
  }
  return true;
}

void AttentionRendezvous::shutdown(const std::string& reason) {
  if (!link_ || link_->broken()) {
    close();
    return;
  }
  try {
    uint32_t none[kMaxStages] = {0, 0};
    ControlPayload unused;
    beginStep(none, 1, kFlagShutdown, &unused);
  } catch (const CommError&) {
    // the FFN rank is already gone; nothing to tell it
  }
  link_->goodbye(reason, 500);
}

void AttentionRendezvous::send(int, const void* src, size_t bytes, const TransferTag& tag, CommStream) {
  link_->post(transferHeader(tag, bytes), src);
}

void AttentionRendezvous::recv(int, void* dst, size_t bytes, const TransferTag& tag, CommStream) {
  link_->recvExpected(transferFrameKind(tag.kind), tag.layer, tag.stage, tag.step, dst, bytes,
                      Deadline::afterMs(config_.stepDeadlineMs), nullptr);
}

void AttentionRendezvous::synchronize(CommStream) { link_->flush(Deadline::afterMs(config_.stepDeadlineMs)); }

}  // namespace afd::comm
