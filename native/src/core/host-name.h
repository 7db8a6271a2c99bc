// This machine's host name (peer-memory bootstraps check that both sides share a host).
#pragma once
#include <unistd.h>

#include <string>

namespace afd {

// The host name, at most 63 bytes; "?" when the system cannot say.
inline std::string hostName() {
  char buf[64] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

}  // namespace afd
