#include "comm/ep-mesh.h"

#include <algorithm>

#include "comm/rendezvous.h"

namespace afd::comm {

namespace {

// Hello (kEpHello) layout, little-endian: u32 rank, u32 numRanks, u32 identity bytes, identity.
// Step start (kEpStep): u32 flags (kStartShutdown), u32 numStages, then the UTF-8 reason
// (shutdown) or u32 rows of stage 0 and of stage 1 (a step).
constexpr uint32_t kStartShutdown = 1;
constexpr size_t kMaxHelloBytes = 1 << 16;
constexpr size_t kMaxStartBytes = 1 << 14;

void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint32_t get32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

std::vector<uint8_t> encodeStart(uint32_t flags, int numStages, const std::string& reason, const int64_t* rows = nullptr) {
  std::vector<uint8_t> out;
  put32(out, flags);
  put32(out, static_cast<uint32_t>(numStages));
  if (flags & kStartShutdown) {
    out.insert(out.end(), reason.begin(), reason.end());
  } else {
    put32(out, rows ? static_cast<uint32_t>(rows[0]) : 0);
    put32(out, rows ? static_cast<uint32_t>(rows[1]) : 0);
  }
  return out;
}

}  // namespace

void EpMeshConfig::validate() const {
  if (numRanks < 2) throw CommError(CommErrorKind::kConfig, "an expert-parallel group needs at least 2 FFN ranks");
  if (rank < 0 || rank >= numRanks) {
    throw CommError(CommErrorKind::kConfig, "ffn rank " + std::to_string(rank) + " is outside the expert-parallel group of " +
                                                std::to_string(numRanks));
  }
  if (static_cast<int>(hosts.size()) != numRanks) {
    throw CommError(CommErrorKind::kConfig, "the expert-parallel group needs one host per FFN rank (got " +
                                                std::to_string(hosts.size()) + " for " + std::to_string(numRanks) + ")");
  }
  if (basePort < 1 || basePort + numRanks - 1 > 65535) {
    throw CommError(CommErrorKind::kConfig, "expert-parallel base port " + std::to_string(basePort) + " is invalid for " +
                                                std::to_string(numRanks) + " FFN ranks (they listen on port..port+" +
                                                std::to_string(numRanks - 1) + ", at most 65535)");
  }
  if (deadlineMs < 1) throw CommError(CommErrorKind::kConfig, "the expert-parallel deadline must be at least 1 ms");
}

namespace {
std::string listenHostOf(const EpMeshConfig& c) {
  c.validate();
  return c.listenHost.empty() ? c.hosts[c.rank] : c.listenHost;
}
}  // namespace

EpMesh::EpMesh(EpMeshConfig config)
    : config_(std::move(config)),
      listener_(listenHostOf(config_), config_.basePort + config_.rank, config_.listenHost.empty()) {
  links_.resize(config_.numRanks);
  peerStages_.assign(config_.numRanks, 0);
  peerRows_.assign(config_.numRanks, 0);
}

EpMesh::~EpMesh() {
  for (auto& l : links_) {
    if (l) l->close();
  }
  listener_.close();
}

std::string EpMesh::peerName(int r) const {
  return "FFN rank " + std::to_string(r) + " (expert-parallel peer of FFN rank " + std::to_string(config_.rank) + ") at " +
         formatAddress(config_.hosts[r], config_.basePort + r);
}

template <typename F>
auto EpMesh::guarded(F&& f) -> decltype(f()) {
  // A failed mesh is closed before the error leaves: the peers fail at once, and no sender
  // thread still reads a caller's buffer once the call has returned.
  try {
    return f();
  } catch (const EpGroupError& e) {
    close(std::string("FFN rank ") + std::to_string(config_.rank) + " left the expert-parallel group: " + e.what());
    throw;
  } catch (const CommError& e) {
    close(std::string("FFN rank ") + std::to_string(config_.rank) + " left the expert-parallel group: " + e.what());
    throw EpGroupError(e.kind(), e.what());
  }
}

TcpLink& EpMesh::link(int peer) {
  if (!links_[peer]) throw EpGroupError(CommErrorKind::kPeerClosed, "not connected to " + peerName(peer) + " (form the group first)");
  return *links_[peer];
}

std::string EpMesh::checkHello(int from, int numRanks, const std::string& identity) const {
  if (numRanks != config_.numRanks || from <= config_.rank || from >= config_.numRanks) {
    return "FFN rank " + std::to_string(from) + " of a group of " + std::to_string(numRanks) + " dialed FFN rank " +
           std::to_string(config_.rank) + " of a group of " + std::to_string(config_.numRanks) +
           "; start every FFN rank with the same --topology and distinct --rank";
  }
  if (identity != config_.identity) {
    return "FFN rank " + std::to_string(from) + " runs [" + identity + "] but FFN rank " + std::to_string(config_.rank) +
           " runs [" + config_.identity + "]; start every FFN rank with the same --topology, --model, " +
           "computeGateOnAttention and --rendezvous-id";
  }
  return {};
}

void EpMesh::form(StopFlag stop, int timeoutMs) {
  guarded([&] {
    close("the expert-parallel group is forming again");
    Deadline deadline = rendezvousDeadline(timeoutMs < 0 ? config_.rendezvousTimeoutMs : timeoutMs);
    for (int j = 0; j < config_.rank; ++j) dial(j, deadline, stop);
    acceptHigherRanks(deadline, stop);
    pollRanks_.clear();
    for (int j = 0; j < config_.numRanks; ++j) {
      if (j != config_.rank) pollRanks_.push_back(j);
    }
    peerStages_.assign(config_.numRanks, 0);
    shutdownBy_.clear();
    step_ = 0;
    formed_ = true;
  });
}

void EpMesh::dial(int j, Deadline deadline, StopFlag stop) {
  const std::string name = peerName(j);
  Socket socket = connectWithRetry(config_.hosts[j], config_.basePort + j, deadline, stop, name);
  auto l = std::make_unique<TcpLink>(std::move(socket), name, config_.deadlineMs);
  std::vector<uint8_t> hello;
  put32(hello, static_cast<uint32_t>(config_.rank));
  put32(hello, static_cast<uint32_t>(config_.numRanks));
  put32(hello, static_cast<uint32_t>(config_.identity.size()));
  hello.insert(hello.end(), config_.identity.begin(), config_.identity.end());
  FrameHeader h;
  h.kind = FrameKind::kEpHello;
  h.byteLength = hello.size();
  l->send(h, hello.data(), Deadline::afterMs(config_.deadlineMs));
  // The lower rank answers once it is accepting (after dialing its own lower ranks).
  FrameHeader reply = l->recvHeader(deadline, stop, "the expert-parallel handshake reply");
  if (reply.kind == FrameKind::kReject) {
    std::string reason(std::min<uint64_t>(reply.byteLength, kMaxHelloBytes), '\0');
    l->recvPayload(reply, reason.data(), reason.size(), Deadline::afterMs(config_.deadlineMs), stop, "the refusal");
    l->close();
    throw EpGroupError(CommErrorKind::kConfig, name + " refused FFN rank " + std::to_string(config_.rank) + ": " + reason);
  }
  if (reply.kind != FrameKind::kHelloAck) {
    throw EpGroupError(CommErrorKind::kProtocol, name + " answered the expert-parallel handshake with " +
                                                     frameKindName(reply.kind) + "; is its port really an FFN group port?");
  }
  links_[j] = std::move(l);
}

void EpMesh::acceptHigherRanks(Deadline deadline, StopFlag stop) {
  auto missing = [&] {
    std::string out;
    for (int j = config_.rank + 1; j < config_.numRanks; ++j) {
      if (links_[j] && (links_[j]->broken() || links_[j]->peerClosed())) links_[j].reset();  // gave up or died: free its slot
      if (!links_[j]) out += (out.empty() ? "" : ", ") + std::to_string(j);
    }
    return out;
  };
  std::vector<uint8_t> payload;
  for (std::string left = missing(); !left.empty(); left = missing()) {
    if (stop && stop->load()) throw EpGroupError(CommErrorKind::kStopped, "stopped while the expert-parallel group formed");
    if (deadline.passed()) {
      throw EpGroupError(CommErrorKind::kTimeout, "FFN rank " + std::to_string(config_.rank) + " listening on " +
                                                      listener_.address() + " for its expert-parallel group: FFN rank(s) " +
                                                      left + " did not connect before the rendezvous timeout; start them " +
                                                      "with the same --topology, --afd-port and enableExpertParallel");
    }
    Socket socket = listener_.accept(deadline.remainingMs(100));
    if (!socket.valid()) continue;
    const std::string stranger = "a connection from " + remoteAddress(socket.fd());
    int from = -1, numRanks = 0;
    std::string identity;
    std::string problem;
    try {
      const HandshakeFrame frame = readHandshakeFrame(socket, FrameKind::kEpHello, kMaxHelloBytes, Deadline::afterMs(config_.deadlineMs),
                                                      stop, stranger, "FFN rank " + std::to_string(config_.rank), &payload);
      problem = frame.refusal;
      if (problem.empty()) {
        if (!frame.ok || payload.size() < 12) continue;  // not an FFN group peer: drop it
        from = static_cast<int>(get32(payload.data()));
        numRanks = static_cast<int>(get32(payload.data() + 4));
        const size_t idBytes = get32(payload.data() + 8);
        if (idBytes != payload.size() - 12) continue;
        identity.assign(reinterpret_cast<const char*>(payload.data() + 12), idBytes);
      }
    } catch (const CommError& e) {
      if (e.kind() == CommErrorKind::kStopped) throw;
      continue;  // the stranger went away or stayed silent
    }
    if (problem.empty()) problem = checkHello(from, numRanks, identity);
    if (problem.empty() && links_[from] && !links_[from]->peerClosed()) {
      problem = "FFN rank " + std::to_string(from) + " is already in the expert-parallel group of FFN rank " +
                std::to_string(config_.rank) + "; two processes were started with the same --rank";
    }
    auto l = std::make_unique<TcpLink>(std::move(socket), problem.empty() ? peerName(from) : stranger, config_.deadlineMs);
    FrameHeader reply;
    reply.kind = problem.empty() ? FrameKind::kHelloAck : FrameKind::kReject;
    reply.byteLength = problem.size();
    try {
      l->send(reply, problem.data(), Deadline::afterMs(config_.deadlineMs));
    } catch (const CommError&) {
      continue;  // it left before the answer: wait for its next attempt
    }
    if (!problem.empty()) {
      l->close();
      continue;
    }
    links_[from] = std::move(l);
  }
}

std::vector<int> EpMesh::pollFds() const {
  std::vector<int> fds;
  for (int r : pollRanks_) fds.push_back(links_[r] ? links_[r]->fd() : -1);
  return fds;
}

void EpMesh::readStart(int peer, Deadline deadline, StopFlag stop, std::string* shutdownBy) {
  TcpLink& l = link(peer);
  FrameHeader h = l.recvHeader(deadline, stop, "the group's step start");
  if (h.kind != FrameKind::kEpStep || h.step != step_ || h.byteLength < 8 || h.byteLength > kMaxStartBytes) {
    throw EpGroupError(CommErrorKind::kProtocol, peerName(peer) + " sent " + frameKindName(h.kind) + " for step " +
                                                     std::to_string(h.step) + " while the start of group step " +
                                                     std::to_string(step_) + " was expected; the group is out of step");
  }
  std::vector<uint8_t> bytes(h.byteLength);
  l.recvPayload(h, bytes.data(), bytes.size(), deadline, stop, "the group's step start");
  const uint32_t flags = get32(bytes.data());
  const int stages = static_cast<int>(get32(bytes.data() + 4));
  if (flags & kStartShutdown) {
    const std::string reason(reinterpret_cast<const char*>(bytes.data() + 8), bytes.size() - 8);
    *shutdownBy = "FFN rank " + std::to_string(peer) + " of the expert-parallel group (" + reason + ")";
    peerStages_[peer] = -1;
    return;
  }
  if (stages < 1 || stages > 2 || bytes.size() != 16) {
    throw EpGroupError(CommErrorKind::kProtocol, peerName(peer) + " announced " + std::to_string(stages) + " stages in a " +
                                                     std::to_string(bytes.size()) + "-byte step start");
  }
  peerStages_[peer] = stages;
  peerRows_[peer] = std::max<int64_t>(get32(bytes.data() + 8), get32(bytes.data() + 12));
}

bool EpMesh::absorbWake(size_t index, std::string* shutdownBy) {
  return guarded([&] {
    const int peer = pollRanks_.at(index);
    if (peerStages_[peer] != 0) return true;  // already read (its next frame waits for this rank's start)
    readStart(peer, Deadline::afterMs(config_.deadlineMs), nullptr, shutdownBy);
    return peerStages_[peer] > 0;
  });
}

int EpMesh::beginStep(int numStages, std::string* shutdownBy, const int64_t rows[2], int64_t* groupRows) {
  return guarded([&] {
    shutdownBy->clear();
    startBytes_ = encodeStart(0, numStages, "", rows);
    int64_t most = rows ? std::max(rows[0], rows[1]) : 0;
    FrameHeader h;
    h.kind = FrameKind::kEpStep;
    h.step = step_;
    h.byteLength = startBytes_.size();
    for (int r : pollRanks_) link(r).post(h, startBytes_.data());
    Deadline deadline = Deadline::afterMs(config_.deadlineMs);
    int stages = numStages;
    for (int r : pollRanks_) {
      if (peerStages_[r] == 0) readStart(r, deadline, nullptr, shutdownBy);
      if (peerStages_[r] < 0) return 0;  // that peer stops: so does the group (the others may never start)
      stages = std::max(stages, peerStages_[r]);
      most = std::max(most, peerRows_[r]);
    }
    if (groupRows) *groupRows = most;
    for (int r : pollRanks_) link(r).flush(deadline);
    peerStages_.assign(config_.numRanks, 0);
    ++step_;
    return shutdownBy->empty() ? stages : 0;
  });
}

void EpMesh::exchange(FrameKind kind, uint32_t layer, uint32_t stage, const std::vector<ByteSpan>& send,
                      std::vector<std::vector<uint8_t>>& recv, const std::vector<size_t>* expectBytes, size_t maxBytes,
                      StopFlag stop) {
  guarded([&] {
    const uint64_t step = step_ - 1;  // the step beginStep started
    for (int r : pollRanks_) {
      FrameHeader h;
      h.kind = kind;
      h.layer = layer;
      h.stage = stage;
      h.step = step;
      h.byteLength = send[r].bytes;
      link(r).post(h, send[r].data);
    }
    // One deadline for the whole exchange: the slowest peer decides when it ends.
    Deadline deadline = Deadline::afterMs(config_.deadlineMs);
    const char* what = frameKindName(kind);
    for (int r : pollRanks_) {
      TcpLink& l = link(r);
      FrameHeader h = l.recvHeader(deadline, stop, what);
      const bool sizeOk = expectBytes ? h.byteLength == (*expectBytes)[r] : h.byteLength <= maxBytes;
      if (h.kind != kind || h.layer != layer || h.stage != stage || h.step != step || !sizeOk) {
        throw EpGroupError(CommErrorKind::kProtocol,
                           "out-of-order frame from " + peerName(r) + ": expected " + what + " layer " +
                               std::to_string(layer) + " stage " + std::to_string(stage) + " step " + std::to_string(step) +
                               ", got " + frameKindName(h.kind) + " layer " + std::to_string(h.layer) + " stage " +
                               std::to_string(h.stage) + " step " + std::to_string(h.step) + " (" +
                               std::to_string(h.byteLength) + " bytes); the group disagrees on the step");
      }
      recv[r].resize(h.byteLength);
      l.recvPayload(h, recv[r].data(), recv[r].size(), deadline, stop, what);
    }
    for (int r : pollRanks_) link(r).flush(deadline);
  });
}

std::vector<std::vector<uint8_t>> EpMesh::allGather(const std::vector<uint8_t>& mine, size_t maxBytes, StopFlag stop) {
  std::vector<ByteSpan> send(config_.numRanks, ByteSpan{mine.data(), mine.size()});
  std::vector<std::vector<uint8_t>> all(config_.numRanks);
  exchange(FrameKind::kEpBootstrap, 0, 0, send, all, nullptr, maxBytes, stop);
  all[config_.rank] = mine;
  return all;
}

int EpMesh::closedPeer() const {
  for (int r : pollRanks_) {
    if (!links_[r] || links_[r]->peerClosed()) return r;
  }
  return -1;
}

void EpMesh::notifyShutdown(const std::string& reason) {
  if (formed_) {
    std::vector<uint8_t> bytes = encodeStart(kStartShutdown, 1, reason.substr(0, kMaxStartBytes - 8));
    FrameHeader h;
    h.kind = FrameKind::kEpStep;
    h.step = step_;
    h.byteLength = bytes.size();
    for (int r : pollRanks_) {
      try {
        if (links_[r]) links_[r]->send(h, bytes.data(), Deadline::afterMs(500));
      } catch (const CommError&) {
        // best effort: that peer is gone already
      }
    }
  }
  close(reason);
}

void EpMesh::close(const std::string& reason) {
  for (auto& l : links_) {
    if (l) l->goodbye(reason, 500);
    l.reset();
  }
  pollRanks_.clear();
  formed_ = false;
}

}  // namespace afd::comm
