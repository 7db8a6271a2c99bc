#include "comm/tcp-socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "comm/comm-error.h"

namespace afd::comm {

namespace {

constexpr int kPollSliceMs = 100;  // how often blocking waits look at the stop flag

std::string errnoText(int err) { return std::string(std::strerror(err)); }

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) freeaddrinfo(list);
  }
};

// Resolves host:port; throws kConfig with the resolver's message.
void resolve(const std::string& host, int port, bool passive, AddrInfo* out, const std::string& peer) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &out->list);
  if (rc != 0) {
    throw CommError(CommErrorKind::kConfig, "cannot resolve " + formatAddress(host, port) + " (" + peer +
                                                "): " + gai_strerror(rc) + "; check the host name");
  }
}

// One non-blocking connect attempt bounded by timeoutMs; returns fd or -1 with *err set.
int tryConnect(const addrinfo* ai, int timeoutMs, int* err) {
  int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) {
    *err = errno;
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int rc = ::poll(&p, 1, timeoutMs);
  if (rc <= 0) {
    *err = rc == 0 ? ETIMEDOUT : errno;
    ::close(fd);
    return -1;
  }
  int soErr = 0;
  socklen_t len = sizeof(soErr);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &soErr, &len);
  if (soErr != 0) {
    *err = soErr;
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::string formatAddress(const std::string& host, int port) {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string remoteAddress(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "unknown";
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "unknown";
  }
  return formatAddress(host, std::atoi(port));
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdownBoth() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

bool Socket::waitReadable(int timeoutMs) const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, timeoutMs) > 0;
}

bool Socket::peerClosed() const {
  if (fd_ < 0) return true;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) return true;
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void Socket::sendAll(struct iovec* iov, int count, Deadline deadline, const std::string& peer) {
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (deadline.passed()) {
          throw CommError(CommErrorKind::kTimeout, "timed out sending to " + peer +
                                                       ": the peer stopped reading (it may be stuck or overloaded)");
        }
        pollfd p{fd_, POLLOUT, 0};
        ::poll(&p, 1, deadline.remainingMs(kPollSliceMs));
        continue;
      }
      if (errno == EPIPE || errno == ECONNRESET) {
        throw CommError(CommErrorKind::kPeerClosed, "lost the connection to " + peer + " while sending (" +
                                                        errnoText(errno) + "); the peer process has probably exited");
      }
      throw CommError(CommErrorKind::kSystem, "send to " + peer + " failed: " + errnoText(errno));
    }
    size_t left = static_cast<size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
}

void Socket::recvAll(void* dst, size_t bytes, Deadline deadline, StopFlag stop, const std::string& peer,
                     const char* what) {
  uint8_t* p = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::recv(fd_, p + done, bytes - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      throw CommError(CommErrorKind::kPeerClosed, "connection to " + peer + " closed while receiving " + what +
                                                      "; the peer process has probably exited");
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      CommErrorKind kind = errno == ECONNRESET ? CommErrorKind::kPeerClosed : CommErrorKind::kSystem;
      throw CommError(kind, "receiving " + std::string(what) + " from " + peer + " failed: " + errnoText(errno));
    }
    if (stop && stop->load(std::memory_order_relaxed)) {
      throw CommError(CommErrorKind::kStopped, "stopped while waiting for " + std::string(what) + " from " + peer);
    }
    if (deadline.passed()) {
      throw CommError(CommErrorKind::kTimeout, "timed out waiting for " + std::string(what) + " from " + peer +
                                                   " (step deadline passed; the peer is stuck, overloaded or gone)");
    }
    pollfd pfd{fd_, POLLIN, 0};
    ::poll(&pfd, 1, deadline.remainingMs(kPollSliceMs));
  }
}

void tuneConnectedSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

Socket connectWithRetry(const std::string& host, int port, Deadline deadline, StopFlag stop, const std::string& peer,
                        int retryMs) {
  AddrInfo ai;
  resolve(host, port, false, &ai, peer);
  int lastErr = 0;
  for (;;) {
    for (const addrinfo* a = ai.list; a; a = a->ai_next) {
      int fd = tryConnect(a, deadline.remainingMs(1000) + 1, &lastErr);
      if (fd >= 0) {
        tuneConnectedSocket(fd);
        return Socket(fd);
      }
    }
    if (stop && stop->load()) {
      throw CommError(CommErrorKind::kStopped, "stopped while connecting to " + peer);
    }
    if (deadline.passed()) {
      throw CommError(CommErrorKind::kTimeout,
                      "could not reach " + peer + " at " + formatAddress(host, port) + " before the rendezvous timeout (" +
                          errnoText(lastErr) + "); start that rank, or check its host and port (FFN rank f listens " +
                          "on base port + f)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(deadline.remainingMs(retryMs)));
  }
}

Listener::Listener(const std::string& host, int port, bool anyIfForeign) {
  std::string where = formatAddress(host, port);
  AddrInfo ai;
  resolve(host, port, true, &ai, "listen address");
  int lastErr = 0;
  for (const addrinfo* a = ai.list; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      lastErr = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      socket_ = Socket(fd);
      sockaddr_storage bound{};
      socklen_t len = sizeof(bound);
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      address_ = formatAddress(host, port_);
      return;
    }
    lastErr = errno;
    ::close(fd);
  }
  if (lastErr == EADDRNOTAVAIL && anyIfForeign && host != "0.0.0.0") {
    *this = Listener("0.0.0.0", port, false);
    return;
  }
  std::string hint = lastErr == EADDRINUSE      ? "; another process uses this port: stop it or choose another base port"
                     : lastErr == EADDRNOTAVAIL ? "; the host is not an address of this machine (use its own IP or 0.0.0.0)"
                                                : "";
  throw CommError(CommErrorKind::kConfig, "cannot listen on " + where + ": " + errnoText(lastErr) + hint);
}

Socket Listener::accept(int timeoutMs) {
  if (!socket_.valid() || !socket_.waitReadable(timeoutMs)) return Socket();
  int fd = ::accept4(socket_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return Socket();
  tuneConnectedSocket(fd);
  return Socket(fd);
}

}  // namespace afd::comm
