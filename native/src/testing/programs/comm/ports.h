// Free loopback ports for the native test programs.
#pragma once
#include <memory>
#include <stdexcept>
#include <vector>

#include "comm/comm-error.h"
#include "comm/tcp-socket.h"

namespace afdtest {

// A free base port with `count` consecutive free ports (bind test; races are unlikely).
inline int freeBasePort(int count) {
  using afd::comm::Listener;
  for (int attempt = 0; attempt < 50; ++attempt) {
    Listener probe("127.0.0.1", 0);
    int base = probe.port();
    if (base + count > 65535) continue;
    probe.close();
    bool ok = true;
    std::vector<std::unique_ptr<Listener>> held;
    for (int i = 0; i < count && ok; ++i) {
      try {
        held.push_back(std::make_unique<Listener>("127.0.0.1", base + i));
      } catch (const afd::comm::CommError&) {
        ok = false;
      }
    }
    if (ok) return base;
  }
  throw std::runtime_error("no free port range");
}

}  // namespace afdtest
