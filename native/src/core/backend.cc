#include "core/backend.h"

#include "core/error.h"

namespace afd {

Buffer::Buffer(Backend* backend, size_t bytes) : backend_(backend), bytes_(bytes) {
  data_ = bytes > 0 ? backend->allocate(bytes) : nullptr;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    backend_ = o.backend_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.backend_ = nullptr;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (data_ != nullptr && backend_ != nullptr) backend_->release(data_);
  data_ = nullptr;
  bytes_ = 0;
}

Tensor Buffer::view(DType t, std::initializer_list<int64_t> shape) const {
  Tensor v(data_, t, shape, backend_ != nullptr ? backend_->device() : Device{});
  AFD_CHECK(v.bytes() <= bytes_, "buffer of " << bytes_ << " bytes is too small for " << dtypeName(t) << " "
                                              << v.shapeString());
  return v;
}

void Backend::causalConv1d(const Tensor&, const Tensor&, Tensor&, const LinearAttentionBatch&, Tensor&) {
  AFD_FAIL("causalConv1d is not implemented on the " << name() << " backend; run linear-attention models on the cpu or cuda backend");
}
void Backend::gatedDeltaRule(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&,
                             const LinearAttentionBatch&, Tensor&) {
  AFD_FAIL("gatedDeltaRule is not implemented on the " << name() << " backend; run linear-attention models on the cpu or cuda backend");
}
void Backend::sigmoidGate(const Tensor&, const Tensor&, Tensor&) {
  AFD_FAIL("sigmoidGate is not implemented on the " << name() << " backend; run Qwen3-Next / Qwen3.5 models on the cpu backend");
}
void Backend::rmsNormGated(const Tensor&, const Tensor&, const Tensor&, float, Tensor&) {
  AFD_FAIL("rmsNormGated is not implemented on the " << name() << " backend; run linear-attention models on the cpu or cuda backend");
}
void Backend::splitColumns(const Tensor&, const std::vector<Tensor*>&) {
  AFD_FAIL("splitColumns is not implemented on the " << name() << " backend; run linear-attention models on the cpu or cuda backend");
}
void Backend::gdnGating(const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&) {
  AFD_FAIL("gdnGating is not implemented on the " << name() << " backend; run linear-attention models on the cpu or cuda backend");
}

void Backend::copyDeviceBeside(const std::vector<DeviceCopy>& copies) {
  for (const DeviceCopy& c : copies) copyDevice(c.dst, c.src, c.bytes);
  synchronize();
}

std::unique_ptr<SharedRegion> Backend::allocateShared(size_t /*bytes*/, const std::string& /*dir*/) {
  throw Error("the " + name() + " backend has no memory another process can map (peer-memory KV transfer)");
}

std::unique_ptr<SharedRegion> Backend::openShared(const std::vector<uint8_t>& /*handle*/, size_t /*bytes*/) {
  throw Error("the " + name() + " backend cannot map another process's memory (peer-memory KV transfer)");
}

void Backend::beginCapture() {
  AFD_FAIL("the " << name() << " backend cannot capture graphs (CUDA graphs need --backend cuda); set cudaGraph.policy \"off\"");
}

std::unique_ptr<CapturedGraph> Backend::endCapture() {
  AFD_FAIL("the " << name() << " backend cannot capture graphs (no capture is in progress)");
  return nullptr;
}

std::unique_ptr<CapturedGraph> captureGraph(Backend& backend, const std::string& what, const std::string& advice,
                                            const std::function<void()>& enqueue) {
  const uint64_t epoch = backend.allocationEpoch();
  std::unique_ptr<CapturedGraph> graph;
  try {
    backend.beginCapture();
    enqueue();
    graph = backend.endCapture();
  } catch (const std::exception& e) {
    backend.abortCapture();
    AFD_FAIL(what << ": capture failed (" << e.what() << "); " << advice);
  }
  AFD_CHECK(backend.allocationEpoch() == epoch, what << ": the backend allocated device memory during the capture; " << advice);
  return graph;
}

}  // namespace afd

namespace afd {

void Backend::moe(const Tensor& x, MoeArgs& a, Tensor& out) {
  AFD_CHECK(a.experts != nullptr, "moe: no experts given");
  AFD_CHECK((a.routerWeight != nullptr) != (a.routerLogits != nullptr),
            "moe: give either the router weight or precomputed router logits");
  const Tensor* logits = a.routerLogits;
  if (a.routerWeight != nullptr) {
    matmul(x, *a.routerWeight, nullptr, a.logits);
    logits = &a.logits;
  }
  routerTopK(*logits, a.topK, a.normTopk, a.expertIds, a.expertWeights);
  moeExperts(x, a.expertIds, a.expertWeights, *a.experts, out);
}

}  // namespace afd
