// The CUDA backend's row-wise ops: embedding lookup, RMS norm (with the residual add),
// elementwise add, row gather and the dummy-weight fill (sampling: sampling-ops.h).
#pragma once
#include <cstdint>

#include "core/backend.h"
#include "cuda/device-memory.h"
#include "cuda/stream-context.h"

namespace afd::cuda {

class RowOps {
 public:
  RowOps(StreamContext& ctx, DeviceMemory& memory) : ctx_(ctx), memory_(memory) {}

  void embedding(const Tensor& ids, const Tensor& table, Tensor& out);
  void rmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out);
  void addRmsNorm(const Tensor& delta, Tensor& residual, const Tensor& weight, float eps, Tensor& out);
  void add(const Tensor& a, const Tensor& b, Tensor& out);
  void sigmoidGate(const Tensor& x, const Tensor& gate, Tensor& out);
  void gatherRows(const Tensor& x, const Tensor& rows, Tensor& out);
  void fillRandom(Tensor& t, uint64_t key, float scale, float offset);

 private:
  StreamContext& ctx_;
  DeviceMemory& memory_;
};

}  // namespace afd::cuda
