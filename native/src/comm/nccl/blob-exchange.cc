#include "comm/nccl/blob-exchange.h"

#include <cstring>

#include "comm/comm-error.h"

namespace afd::comm {
namespace {

// Header: magic u32, tag length u32, payload length u64 (little-endian hosts only,
// like the rest of the wire), then the tag bytes and the payload.
struct BlobHeader {
  uint32_t magic = kBlobMagic;
  uint32_t tagBytes = 0;
  uint64_t payloadBytes = 0;
};
constexpr uint64_t kMaxBlobBytes = 64ull << 20;
constexpr uint32_t kMaxTagBytes = 64;

Deadline deadlineFor(int timeoutMs) { return timeoutMs <= 0 ? Deadline::never() : Deadline::afterMs(timeoutMs); }

}  // namespace

std::unique_ptr<BlobChannel> BlobChannel::acceptOn(Listener& listener, int timeoutMs) {
  Socket s = listener.accept(timeoutMs <= 0 ? -1 : timeoutMs);
  if (!s.valid()) {
    throw CommError(CommErrorKind::kTimeout, "no attention rank connected to the GPU bootstrap port " +
                                                 listener.address() + " within " + std::to_string(timeoutMs) +
                                                 " ms; start the attention side or raise the rendezvous timeout");
  }
  tuneConnectedSocket(s.fd());
  const std::string peer = "attention rank at " + remoteAddress(s.fd());
  return std::unique_ptr<BlobChannel>(new BlobChannel(std::move(s), peer));
}

std::unique_ptr<BlobChannel> BlobChannel::accept(const std::string& host, int port, int timeoutMs, int* boundPort) {
  Listener listener(host, port);
  if (boundPort) *boundPort = listener.port();
  return acceptOn(listener, timeoutMs);
}

std::unique_ptr<BlobChannel> BlobChannel::connect(const std::string& host, int port, int timeoutMs) {
  const std::string peer = "FFN rank at " + formatAddress(host, port);
  Socket s = connectWithRetry(host, port, deadlineFor(timeoutMs), nullptr, peer);
  return std::unique_ptr<BlobChannel>(new BlobChannel(std::move(s), peer));
}

void BlobChannel::send(const std::string& tag, const void* data, size_t bytes) {
  if (tag.size() > kMaxTagBytes) throw CommError(CommErrorKind::kConfig, "blob tag too long: " + tag);
  BlobHeader h;
  h.tagBytes = static_cast<uint32_t>(tag.size());
  h.payloadBytes = bytes;
  struct iovec iov[3] = {{&h, sizeof h}, {const_cast<char*>(tag.data()), tag.size()}, {const_cast<void*>(data), bytes}};
  socket_.sendAll(iov, 3, Deadline::afterMs(30000), peer_);
}

std::vector<uint8_t> BlobChannel::recv(const std::string& tag, int timeoutMs) {
  const Deadline deadline = deadlineFor(timeoutMs);
  BlobHeader h;
  socket_.recvAll(&h, sizeof h, deadline, nullptr, peer_, "bootstrap blob header");
  if (h.magic != kBlobMagic || h.tagBytes > kMaxTagBytes || h.payloadBytes > kMaxBlobBytes) {
    throw CommError(CommErrorKind::kProtocol, peer_ + " sent something that is not an AFD GPU bootstrap message; "
                                                      "check that both sides run the same build and port");
  }
  std::string got(h.tagBytes, '\0');
  socket_.recvAll(got.data(), got.size(), deadline, nullptr, peer_, "bootstrap blob tag");
  std::vector<uint8_t> payload(h.payloadBytes);
  socket_.recvAll(payload.data(), payload.size(), deadline, nullptr, peer_, "bootstrap blob");
  if (got != tag) {
    std::string text(payload.begin(), payload.end());
    throw CommError(CommErrorKind::kProtocol, peer_ + " sent \"" + got + "\" where \"" + tag + "\" was expected" +
                                                  (got == "error" ? ": " + text : std::string()));
  }
  return payload;
}

std::string BlobChannel::recvString(const std::string& tag, int timeoutMs) {
  std::vector<uint8_t> b = recv(tag, timeoutMs);
  return std::string(b.begin(), b.end());
}

}  // namespace afd::comm
