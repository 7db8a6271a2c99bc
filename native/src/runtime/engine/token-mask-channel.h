// The hand-over of deferred allowed-token masks (StepExtras.tokenMask absent while some
// maskRows entry is >= 0): the host computes a step's mask while the device runs its
// layers, and the step waits for it before sampling. Steps reserve a ticket when they are
// submitted; the n-th provide() is the mask of the n-th ticket, so a mask always reaches
// the step it was made for; a step that times out gives up its place (the next provide()
// goes to the next step). provide() never takes the engine's step mutex (the waiting
// step holds it). Thread-safe.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace afd {

class TokenMaskChannel {
 public:
  // How long a step waits for its mask before it fails.
  static constexpr std::chrono::seconds kTimeout{60};

  // A deferred step's ticket; its mask must have rows x wordsPerRow words.
  int64_t reserve(int rows, int64_t wordsPerRow);
  // The mask of the oldest ticket that has none yet (copied); null withdraws it (its step
  // fails with "token mask withdrawn"). A mask of the wrong length fails that step with the
  // expected length. Throws when every ticket already has its mask (no step waits for one).
  // A ticket whose step already ended (it failed before its wait) drops its mask.
  void provide(const int32_t* mask, size_t words);
  // Waits (up to `timeout`) for the ticket's mask and returns it, or throws why there is none.
  std::vector<int32_t> take(int64_t ticket, std::chrono::milliseconds timeout = kTimeout);
  // The ticket's step has ended: forget the ticket (a mask still to come is dropped).
  void release(int64_t ticket);
  // Fails every step still waiting, with `reason` (the engine is closing).
  void withdrawAll(const std::string& reason);

 private:
  struct Slot {
    int rows = 0;
    int64_t wordsPerRow = 0;
    bool given = false;
    std::vector<int32_t> mask;
    std::string error;  // set: the step fails with it
  };
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t reserved_ = 0;  // tickets handed out
  int64_t provided_ = 0;  // provide() calls paired with a ticket
  std::map<int64_t, Slot> slots_;
  std::set<int64_t> expired_;  // tickets whose step timed out before any provide() reached them
};

}  // namespace afd
