#include "comm/wire-time.h"

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "comm/frame.h"

namespace afd::comm {

const char* wireBasisName(WireBasis basis) {
  switch (basis) {
    case WireBasis::kOneWay: return "one-way";
    case WireBasis::kRoundTripHalf: return "round-trip/2";
    case WireBasis::kOpSpan: return "op-span";
    case WireBasis::kUnavailable: break;
  }
  return "unavailable";
}

uint64_t wallClockNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {
uint64_t readClockDomain() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (in && std::getline(in, bootId) && !bootId.empty()) return payloadChecksum(bootId.data(), bootId.size());
  // No boot id: unique to this process, so no peer shares it.
  const uint64_t mine[2] = {static_cast<uint64_t>(::getpid()), wallClockNs()};
  return payloadChecksum(mine, sizeof mine) | 1;
}
}  // namespace

uint64_t hostClockDomain() {
  static const uint64_t domain = readClockDomain();
  return domain;
}

}  // namespace afd::comm
