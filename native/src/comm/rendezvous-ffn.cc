// FFN side of the rendezvous link: listener, handshake of the block's attention peers,
// the control-plane hub (gather requests, call idle peers, announce the merged step)
// and the tcp data plane to each peer.
#include <poll.h>

#include "comm/rendezvous.h"

namespace afd::comm {

namespace {

std::string listenHostOf(const RendezvousConfig& c) {
  c.validate(true);
  return c.listenHost.empty() ? c.ffnHosts[c.rank] : c.listenHost;
}

constexpr size_t kMaxHelloBytes = 1 << 16;

}  // namespace

FfnRendezvous::FfnRendezvous(RendezvousConfig config)
    : config_(std::move(config)),
      listener_(listenHostOf(config_), config_.basePort + config_.rank, config_.listenHost.empty()) {
  block_ = config_.topology.blockOf(config_.rank);
  links_.resize(block_.size);
  published_.assign(block_.size, false);
  request_.reset(1);
}

FfnRendezvous::~FfnRendezvous() {
  for (auto& link : links_) {
    if (link) link->close();
  }
  listener_.close();
}

void FfnRendezvous::acceptPeers(StopFlag stop, int timeoutMs, const std::function<void()>& beforeAck) {
  Deadline deadline = rendezvousDeadline(timeoutMs < 0 ? config_.rendezvousTimeoutMs : timeoutMs);
  std::vector<uint8_t> payload;
  // Gather until every slot holds a live peer (one may leave while others join).
  while (dropDeadPeers(), joined_.load() < block_.size) {
    if (stop && stop->load()) throw CommError(CommErrorKind::kStopped, "stopped during rendezvous");
    if (deadline.passed()) {
      std::string missing;
      for (int p = 0; p < block_.size; ++p) {
        if (!links_[p]) missing += (missing.empty() ? "" : ", ") + std::to_string(block_.start + p);
      }
      throw CommError(CommErrorKind::kTimeout,
                      "FFN rank " + std::to_string(config_.rank) + " listening on " + listener_.address() +
                          ": attention rank(s) " + missing + " did not connect before the rendezvous timeout; " +
                          "start them with the same --topology and --afd-host/--afd-port");
    }
    Socket socket = listener_.accept(deadline.remainingMs(100));
    if (!socket.valid()) continue;
    std::string from = remoteAddress(socket.fd());
    std::string stranger = "a connection from " + from;
    HelloPayload hello;
    std::string problem;
    try {
      // Read the hello on the raw socket; the link is created once we know who it is.
      const HandshakeFrame frame = readHandshakeFrame(socket, FrameKind::kHello, kMaxHelloBytes, Deadline::afterMs(config_.stepDeadlineMs),
                                                      stop, stranger, "FFN rank " + std::to_string(config_.rank), &payload);
      if (!frame.refusal.empty()) {
        problem = frame.refusal;
      } else {
        if (!frame.ok) continue;  // not an AFD peer: drop it
        problem = decodeHello(payload.data(), payload.size(), &hello);
        if (problem.empty()) problem = checkHello(hello, config_.topology, config_.rank, config_.model, config_.rendezvousId);
        dropDeadPeers();
        if (problem.empty() && links_[hello.attentionRank - block_.start]) {
          problem = "attention rank " + std::to_string(hello.attentionRank) + " is already connected to FFN rank " +
                    std::to_string(config_.rank) + "; two processes were started with the same --rank";
        }
      }
    } catch (const CommError& e) {
      if (e.kind() == CommErrorKind::kStopped) throw;
      continue;  // the stranger went away or stayed silent
    }
    std::string peer = "attention rank " + std::to_string(hello.attentionRank) + " (from " + from + ")";
    auto link = std::make_unique<TcpLink>(std::move(socket), problem.empty() ? peer : stranger, config_.stepDeadlineMs);
    if (!problem.empty()) {
      try {
        FrameHeader reply;
        reply.kind = FrameKind::kReject;
        reply.byteLength = problem.size();
        link->send(reply, problem.data(), Deadline::afterMs(1000));
      } catch (const CommError&) {
      }
      link->close();
      continue;
    }
    links_[hello.attentionRank - block_.start] = std::move(link);
    joined_.fetch_add(1);
  }
  if (beforeAck) beforeAck();
  // Everyone is here: acknowledge. A peer that died while waiting fails its ack (or
  // the first step) and the block rendezvous again.
  FrameHeader ack;
  ack.kind = FrameKind::kHelloAck;
  for (auto& link : links_) link->post(ack, nullptr);
  for (auto& link : links_) link->flush(Deadline::afterMs(config_.stepDeadlineMs));
  step_ = 0;
}

void FfnRendezvous::dropDeadPeers() {
  // A joined peer sends nothing before the ack, so a readable link is closed (or broken):
  // that rank gave up or died while the block gathered; free its slot for its restart.
  for (auto& link : links_) {
    if (link && (link->broken() || link->readable(0))) {
      link->close();
      link.reset();
      joined_.fetch_sub(1);
    }
  }
}

void FfnRendezvous::readRequest(int p, Deadline deadline, StopFlag stop) {
  TcpLink& link = *links_[p];
  FrameHeader h = link.recvHeader(deadline, stop, "a step request");
  if (h.kind != FrameKind::kStepRequest) {
    throw CommError(CommErrorKind::kProtocol, link.peer() + " sent " + frameKindName(h.kind) +
                                                  " while a step request was expected");
  }
  scratch_.resize(maxControlPayloadBytes(1));
  link.recvPayload(h, scratch_.data(), scratch_.size(), deadline, stop, "a step request");
  std::string problem = decodeControlPayload(scratch_.data(), h.byteLength, &request_);
  if (problem.empty() && request_.numPeers != 1) problem = "a step request must describe exactly one peer";
  if (problem.empty() && (request_.step != step_ || h.step != step_)) {
    problem = "it is at step " + std::to_string(request_.step) + " but its block is at step " + std::to_string(step_);
  }
  if (!problem.empty()) throw CommError(CommErrorKind::kProtocol, "bad step request from " + link.peer() + ": " + problem);
  published_[p] = true;
}

bool FfnRendezvous::recvStep(ControlPayload* merged, StopFlag stop, std::string* shutdownBy, const StepWake* wake) {
  merged->reset(block_.size);
  merged->step = step_;
  merged->numStages = 1;
  merged->flags = 0;
  published_.assign(block_.size, false);
  // Idle: wait without deadline for the first peer that wants to step (or, with a wake
  // set, for the FFN group's first step start: then first stays -1 and every peer is called).
  const size_t numWake = wake ? wake->fds.size() : 0;
  pollFds_.resize(block_.size + numWake);
  int first = -1;
  bool woken = false;
  while (first < 0 && !woken) {
    if (stop && stop->load()) return false;
    for (int p = 0; p < block_.size; ++p) {
      links_[p]->throwIfBroken();
      pollFds_[p] = pollfd{links_[p]->fd(), POLLIN, 0};
    }
    for (size_t i = 0; i < numWake; ++i) pollFds_[block_.size + i] = pollfd{wake->fds[i], POLLIN, 0};
    if (::poll(pollFds_.data(), pollFds_.size(), 100) <= 0) continue;
    for (int p = 0; p < block_.size && first < 0; ++p) {
      if (pollFds_[p].revents != 0) first = p;
    }
    for (size_t i = 0; first < 0 && i < numWake && !woken; ++i) {
      if (pollFds_[block_.size + i].revents == 0) continue;
      if (!wake->onWake(i, shutdownBy)) return false;
      woken = true;
    }
  }
  Deadline deadline = Deadline::afterMs(config_.stepDeadlineMs);
  auto absorb = [&](int p) {
    readRequest(p, deadline, stop);
    merged->flags |= request_.flags;
    if (request_.numStages > merged->numStages) merged->numStages = request_.numStages;
    for (int s = 0; s < kMaxStages; ++s) merged->setTokens(p, s, request_.tokens(0, s));
    if (request_.flags & kFlagShutdown) {
      *shutdownBy = links_[p]->peer();
      return false;
    }
    return true;
  };
  if (first >= 0 && !absorb(first)) return false;
  FrameHeader call;
  call.kind = FrameKind::kStepCall;
  call.step = step_;
  for (int p = 0; p < block_.size; ++p) {
    if (!published_[p]) links_[p]->post(call, nullptr);
  }
  for (int p = 0; p < block_.size; ++p) {
    if (!published_[p] && !absorb(p)) return false;
  }
  encodeControlPayload(*merged, &scratch_);
  FrameHeader go;
  go.kind = FrameKind::kStepGo;
  go.step = step_;
  go.byteLength = scratch_.size();
  for (auto& link : links_) link->post(go, scratch_.data());
  for (auto& link : links_) link->flush(deadline);
  ++step_;
  return true;
}

void FfnRendezvous::send(int peer, const void* src, size_t bytes, const TransferTag& tag, CommStream) {
  links_[peer]->post(transferHeader(tag, bytes), src);
}

void FfnRendezvous::recv(int peer, void* dst, size_t bytes, const TransferTag& tag, CommStream) {
  links_[peer]->recvExpected(transferFrameKind(tag.kind), tag.layer, tag.stage, tag.step, dst, bytes,
                             Deadline::afterMs(config_.stepDeadlineMs), nullptr);
}

void FfnRendezvous::synchronize(CommStream) {
  Deadline deadline = Deadline::afterMs(config_.stepDeadlineMs);
  for (auto& link : links_) link->flush(deadline);
}

void FfnRendezvous::sendBootstrap(int peer, const std::vector<uint8_t>& blob) {
  if (peer < 0 || peer >= block_.size || !links_[peer]) {
    throw CommError(CommErrorKind::kConfig, "bootstrap: attention peer " + std::to_string(peer) + " has not joined");
  }
  links_[peer]->sendBlob(FrameKind::kBootstrap, blob, Deadline::afterMs(config_.stepDeadlineMs));
}

std::vector<uint8_t> FfnRendezvous::recvBootstrapReply(int peer, int timeoutMs) {
  if (peer < 0 || peer >= block_.size || !links_[peer]) {
    throw CommError(CommErrorKind::kConfig, "bootstrap reply: attention peer " + std::to_string(peer) + " has not joined");
  }
  return links_[peer]->recvBlob(FrameKind::kBootstrapReply, Deadline::afterMs(timeoutMs),
                                "the data-plane bootstrap reply (peer-memory handle)",
                                "do both sides use the same connector (peer)?");
}

void FfnRendezvous::closePeers(const std::string& reason) {
  for (auto& link : links_) {
    if (link) link->goodbye(reason, 500);
    link.reset();
  }
  joined_.store(0);
  step_ = 0;
}

}  // namespace afd::comm
