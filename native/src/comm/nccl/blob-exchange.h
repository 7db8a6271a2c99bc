// Bootstrap side channel of the GPU data plane: before NCCL (or peer memory) can carry
// anything, the two sides swap a few small blobs over TCP: the NCCL unique id, CUDA IPC
// handles, the run's options, and at the end the FFN side's stats. Each blob is a
// length-prefixed message with a tag, so a stranger or a desynchronised peer is a clear
// error. Host-only (no CUDA), so it is compiled and tested in every build.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/deadline.h"
#include "comm/tcp-socket.h"

namespace afd::comm {

// "AFDB" little-endian; the first 4 bytes of every blob header.
constexpr uint32_t kBlobMagic = 0x42444641u;

class BlobChannel {
 public:
  // FFN side: listens on host:port (0 = ephemeral) and accepts one peer within timeoutMs.
  static std::unique_ptr<BlobChannel> accept(const std::string& host, int port, int timeoutMs, int* boundPort = nullptr);
  // Listener already bound (so the port can be published before the peer dials).
  static std::unique_ptr<BlobChannel> acceptOn(Listener& listener, int timeoutMs);
  // Attention side: connects to host:port, retrying until timeoutMs.
  static std::unique_ptr<BlobChannel> connect(const std::string& host, int port, int timeoutMs);

  // Sends one blob with a tag (e.g. "nccl-id", "ipc", "options", "stats").
  void send(const std::string& tag, const void* data, size_t bytes);
  void sendString(const std::string& tag, const std::string& s) { send(tag, s.data(), s.size()); }
  // Receives the next blob; it must carry `tag` (else a protocol error naming both).
  std::vector<uint8_t> recv(const std::string& tag, int timeoutMs);
  std::string recvString(const std::string& tag, int timeoutMs);
  // True when the peer closed (EOF) or sent something, within timeoutMs.
  bool readable(int timeoutMs) const { return socket_.waitReadable(timeoutMs); }
  // The peer closed or reset the channel (its process is gone); never blocks.
  bool peerClosed() const { return socket_.peerClosed(); }
  const std::string& peer() const { return peer_; }

 private:
  BlobChannel(Socket socket, std::string peer) : socket_(std::move(socket)), peer_(std::move(peer)) {}
  Socket socket_;
  std::string peer_;
};

}  // namespace afd::comm
