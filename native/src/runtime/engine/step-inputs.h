// The i32 inputs of one engine step, packed so that one upload moves them all (on CUDA
// every host-to-device copy synchronizes): per token (the padded count in graph steps)
// the token id, position, KV cache slot, sequence index within its stage, the sampled
// row list and the prompt-logprob row list, then the block tables [tableRows, blocksPerRow],
// then per table row (sequence) the gdn layers' batch: state slot, hasState, and the
// stage-relative token offsets (seqStarts, tableRows + 2 entries: each stage's own S_s + 1).
#pragma once
#include <cstdint>
#include <vector>

#include "core/backend.h"

namespace afd {

class StepInputs {
 public:
  // Sizes the host arrays for a step and zeroes them; capacity is kept across steps.
  void reset(int64_t tokens, int64_t tableRows, int64_t blocksPerRow) {
    tokens_ = tokens;
    tableRows_ = tableRows;
    blocksPerRow_ = blocksPerRow;
    host_.assign(static_cast<size_t>(kPerToken * tokens + tableRows * blocksPerRow + 3 * tableRows + 2), 0);
  }
  int32_t* ids() { return host_.data(); }
  int32_t* positions() { return ids() + tokens_; }
  int32_t* slots() { return ids() + 2 * tokens_; }
  int32_t* tokenSeq() { return ids() + 3 * tokens_; }
  int32_t* sampleRows() { return ids() + 4 * tokens_; }
  int32_t* promptRows() { return ids() + 5 * tokens_; }
  int32_t* tables() { return ids() + kPerToken * tokens_; }
  int32_t* stateSlots() { return tables() + tableRows_ * blocksPerRow_; }
  int32_t* hasState() { return stateSlots() + tableRows_; }
  int32_t* seqStarts() { return hasState() + tableRows_; }
  int64_t blocksPerRow() const { return blocksPerRow_; }

  // Copies the host arrays into `device` (grown on `backend` when too small) and returns
  // the device view of each array.
  struct Device {
    int32_t* ids;
    int32_t* positions;
    int32_t* slots;
    int32_t* tokenSeq;
    int32_t* sampleRows;
    int32_t* promptRows;
    int32_t* tables;
    int32_t* stateSlots;
    int32_t* hasState;
    int32_t* seqStarts;
  };
  Device upload(Backend& backend, Buffer& device) const {
    const size_t bytes = host_.size() * sizeof(int32_t);
    device.growTo(&backend, bytes);
    backend.copyToDevice(device.data(), host_.data(), bytes);
    int32_t* d = static_cast<int32_t*>(device.data());
    int32_t* tables = d + kPerToken * tokens_;
    int32_t* slots = tables + tableRows_ * blocksPerRow_;
    return Device{d, d + tokens_, d + 2 * tokens_, d + 3 * tokens_, d + 4 * tokens_, d + 5 * tokens_, tables,
                  slots, slots + tableRows_, slots + 2 * tableRows_};
  }

 private:
  static constexpr int64_t kPerToken = 6;
  std::vector<int32_t> host_;
  int64_t tokens_ = 0, tableRows_ = 0, blocksPerRow_ = 0;
};

}  // namespace afd
