// A peer of an older AFD build for the native test programs: connects to a listener,
// sends a hello of `kind` with the previous wire version, and returns the reason the
// listener refused it with (what such a peer's decoder would show).
#pragma once
#include <sys/uio.h>

#include <cstdint>
#include <string>

#include "comm/frame.h"
#include "comm/tcp-socket.h"
#include "testing/programs/harness.h"

namespace afdtest {

inline std::string refusalOfOldBuild(int port, afd::comm::FrameKind kind) {
  using namespace afd::comm;
  Socket old = connectWithRetry("127.0.0.1", port, Deadline::afterMs(2000), nullptr, "the listener");
  FrameHeader hello;
  hello.version = static_cast<uint16_t>(kWireVersion - 1);
  hello.kind = kind;
  uint8_t bytes[kFrameHeaderBytes];
  encodeFrameHeader(hello, bytes);
  struct iovec iov{bytes, kFrameHeaderBytes};
  old.sendAll(&iov, 1, Deadline::afterMs(2000), "the listener");
  old.recvAll(bytes, kFrameHeaderBytes, Deadline::afterMs(5000), nullptr, "the listener", "the reject");
  FrameHeader reply;
  const std::string problem = decodeFrameHeader(bytes, &reply);
  CHECK_MSG(problem.empty(), problem);
  CHECK(reply.kind == FrameKind::kReject);
  std::string reason(reply.byteLength, '\0');
  old.recvAll(reason.data(), reason.size(), Deadline::afterMs(5000), nullptr, "the listener", "the reason");
  return reason;
}

}  // namespace afdtest
