#include "runtime/engine/token-mask-channel.h"

#include <sstream>

#include "core/error.h"

namespace afd {

int64_t TokenMaskChannel::reserve(int rows, int64_t wordsPerRow) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& slot = slots_[reserved_];
  slot.rows = rows;
  slot.wordsPerRow = wordsPerRow;
  return reserved_++;
}

void TokenMaskChannel::provide(const int32_t* mask, size_t words) {
  std::lock_guard<std::mutex> lock(mu_);
  // A step that timed out never got its mask: the next one pairs with the next step.
  for (auto e = expired_.begin(); e != expired_.end() && *e == provided_; e = expired_.erase(e)) ++provided_;
  AFD_CHECK(provided_ < reserved_, "provideTokenMask: no step waits for a token mask (every submitted step with mask rows and no "
                                   "tokenMask has its mask); call step(plan) first, then provideTokenMask once for it");
  const auto it = slots_.find(provided_++);
  if (it == slots_.end()) return;  // that step ended before its wait (it failed): nothing needs the mask
  Slot& slot = it->second;
  if (slot.given) return;  // withdrawn meanwhile (the engine is closing)
  const int64_t expected = slot.rows * slot.wordsPerRow;
  if (mask == nullptr) {
    slot.error = "token mask withdrawn";
  } else if (static_cast<int64_t>(words) != expected) {
    std::ostringstream m;
    m << "token mask: provideTokenMask gave " << words << " int32 words, expected " << slot.rows << " mask rows x " << slot.wordsPerRow
      << " words (ceil(vocabSize / 32)) = " << expected;
    slot.error = m.str();
  } else {
    slot.mask.assign(mask, mask + words);
  }
  slot.given = true;
  cv_.notify_all();
}

std::vector<int32_t> TokenMaskChannel::take(int64_t ticket, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto it = slots_.find(ticket);
  AFD_CHECK(it != slots_.end(), "token mask: ticket " << ticket << " is unknown (already taken or released)");
  const bool given = cv_.wait_for(lock, timeout, [&] { return it->second.given; });
  Slot slot = std::move(it->second);
  slots_.erase(it);
  if (!given && ticket >= provided_) expired_.insert(ticket);
  AFD_CHECK(given, "token mask: none was given within " << std::chrono::duration_cast<std::chrono::seconds>(timeout).count()
                                                          << " s; the step's mask is deferred (maskRows set, no tokenMask): call "
                                                             "provideTokenMask(mask) after step(plan)");
  AFD_CHECK(slot.error.empty(), slot.error);
  return std::move(slot.mask);
}

void TokenMaskChannel::release(int64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  slots_.erase(ticket);
}

void TokenMaskChannel::withdrawAll(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [ticket, slot] : slots_) {
    if (slot.given) continue;
    slot.given = true;
    slot.error = reason;
  }
  cv_.notify_all();
}

}  // namespace afd
