// Thin RAII layer over POSIX TCP sockets: connect (with retries), listen/accept, and
// send/receive of whole buffers with deadlines. Every error names the peer it was
// talking to (`peer` strings such as "FFN rank 1 at 10.0.0.2:29501").
#pragma once
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "comm/deadline.h"

namespace afd::comm {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void close();
  // Stops both directions so a thread blocked on this socket wakes up (EOF / EPIPE).
  void shutdownBoth();

  // Writes every byte of iov[0..count) before the deadline (loops over partial writes).
  void sendAll(struct iovec* iov, int count, Deadline deadline, const std::string& peer);
  // Reads exactly `bytes` into dst; throws kPeerClosed on EOF, kTimeout past the
  // deadline, kStopped when *stop becomes true.
  void recvAll(void* dst, size_t bytes, Deadline deadline, StopFlag stop, const std::string& peer,
               const char* what);
  // Waits until the socket is readable (data or EOF). False on timeout / stop.
  bool waitReadable(int timeoutMs) const;
  // True when the peer has closed or reset the connection (EOF is next to read); never
  // blocks and consumes nothing, so it is safe beside a reader that owns the stream.
  bool peerClosed() const;

 private:
  int fd_ = -1;
};

// Applies TCP_NODELAY and keepalive to a connected socket.
void tuneConnectedSocket(int fd);

// Connects to host:port, retrying refused / unreachable attempts every retryMs until the
// deadline; throws kTimeout naming `peer` and the last error, kStopped on *stop.
Socket connectWithRetry(const std::string& host, int port, Deadline deadline, StopFlag stop, const std::string& peer,
                        int retryMs = 100);

class Listener {
 public:
  // Binds host:port (host "0.0.0.0" = every interface) and listens; throws kConfig
  // with the address and errno text (e.g. address already in use). With anyIfForeign,
  // a host that is not an address of this machine (NAT, container port mapping) binds
  // every interface instead.
  Listener(const std::string& host, int port, bool anyIfForeign = false);
  // Accepts one connection; an invalid Socket when timeoutMs passes first.
  Socket accept(int timeoutMs);
  int port() const { return port_; }
  const std::string& address() const { return address_; }
  void close() { socket_.close(); }

 private:
  Socket socket_;
  int port_ = 0;
  std::string address_;
};

// The remote "host:port" of a connected socket ("unknown" when it cannot be read).
std::string remoteAddress(int fd);

// "host:port" with brackets for IPv6 literals.
std::string formatAddress(const std::string& host, int port);

}  // namespace afd::comm
