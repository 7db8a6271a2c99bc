// Shared pieces of the op conformance suite (conformance*.cc): tensors mirrored on host
// and device, NaN-poisoned outputs, norm-wise comparison.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu-backend.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-check.h"
#include "cuda/testing/conformance.h"

namespace afd::cuda::conformance {

// Bounds: f32 math on f32 data.
inline constexpr double kF32Bound = 2e-5;
// f32 activations against bf16 weights (split into bf16 hi + lo on the tensor cores).
inline constexpr double kSplitBound = 2e-4;
// bf16 activations (the engine on CUDA) against the CPU's f32 computation of the same values.
inline constexpr double kBf16Bound = 1e-2;

// One tensor twice: host (CPU backend) and device (CUDA backend), same contents.
struct Twin {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> host;
  DeviceBuffer dev;

  int64_t numel() const { return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()); }
  Tensor view(void* data, Device d) const {
    Tensor t;
    t.data = data;
    t.dtype = dtype;
    t.ndim = static_cast<int>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.dims[i] = shape[i];
    t.device = d;
    return t;
  }
  Tensor cpu() { return view(host.data(), Device{}); }
  Tensor gpu() { return view(dev.data(), Device{DeviceKind::Cuda, 0}); }
  // Legacy-stream copies and memsets may still be in flight when they return; the ops run on
  // the backend's non-blocking stream, so every setup step ends with a device sync.
  void upload() {
    AFD_CUDA_CHECK(cudaMemcpy(dev.data(), host.data(), host.size(), cudaMemcpyHostToDevice));
    AFD_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<float> hostFloats() const { return toFloats(host.data()); }
  std::vector<float> deviceFloats() const {
    std::vector<uint8_t> bytes(host.size());
    AFD_CUDA_CHECK(cudaMemcpy(bytes.data(), dev.data(), bytes.size(), cudaMemcpyDeviceToHost));
    return toFloats(bytes.data());
  }
  std::vector<float> toFloats(const uint8_t* p) const {
    std::vector<float> f(numel());
    for (int64_t i = 0; i < numel(); ++i) {
      switch (dtype) {
        case DType::F32: std::memcpy(&f[i], p + 4 * i, 4); break;
        case DType::I32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); f[i] = static_cast<float>(v); break; }
        case DType::BF16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); f[i] = bf16ToF32(v); break; }
        case DType::F16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); f[i] = f16ToF32(v); break; }
        default: f[i] = 0;
      }
    }
    return f;
  }
};

class Suite {
 public:
  Suite(int device, const CudaOptions& options, uint64_t seed) : cuda_(device, options), cpu_(0), rng_(seed) {}

  Twin make(DType t, std::vector<int64_t> shape) {
    Twin w;
    w.dtype = t;
    w.shape = std::move(shape);
    w.host.assign(static_cast<size_t>(w.numel()) * dtypeBytes(t), 0);
    w.dev = DeviceBuffer("conformance tensor", std::max<size_t>(w.host.size(), 4));
    return w;
  }
  Twin random(DType t, std::vector<int64_t> shape, float lo = -1.0f, float hi = 1.0f) {
    Twin w = make(t, std::move(shape));
    std::uniform_real_distribution<float> u(lo, hi);
    for (int64_t i = 0; i < w.numel(); ++i) setElem(w, i, u(rng_));
    w.upload();
    return w;
  }
  Twin ints(std::vector<int32_t> values, std::vector<int64_t> shape) {
    Twin w = make(DType::I32, std::move(shape));
    std::memcpy(w.host.data(), values.data(), 4 * values.size());
    w.upload();
    return w;
  }
  // Output: host zero, device poisoned with NaN (0xFF bytes are NaN in f32 and bf16).
  Twin output(DType t, std::vector<int64_t> shape) {
    Twin w = make(t, std::move(shape));
    AFD_CUDA_CHECK(cudaMemset(w.dev.data(), 0xff, w.host.size()));
    AFD_CUDA_CHECK(cudaDeviceSynchronize());
    return w;
  }
  void setElem(Twin& w, int64_t i, float v) {
    switch (w.dtype) {
      case DType::F32: std::memcpy(w.host.data() + 4 * i, &v, 4); break;
      case DType::BF16: { const uint16_t b = f32ToBf16(v); std::memcpy(w.host.data() + 2 * i, &b, 2); break; }
      case DType::F16: { const uint16_t b = f32ToF16(v); std::memcpy(w.host.data() + 2 * i, &b, 2); break; }
      default: break;
    }
  }
  int randInt(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // The values of t (any float dtype) as an f32 twin: the CPU reference of a bf16 input.
  Twin widened(const Twin& t) {
    Twin w = make(DType::F32, t.shape);
    const std::vector<float> v = t.hostFloats();
    std::memcpy(w.host.data(), v.data(), 4 * v.size());
    w.upload();
    return w;
  }
  void check(const std::string& op, const std::string& shape, const std::string& dtype, const Twin& out, double bound) {
    checkAgainst(op, shape, dtype, out, out, bound);
  }
  // The CPU result in ref's host side against the CUDA result in got's device side (the
  // two may differ in dtype, e.g. an f32 reference of a bf16 output).
  void checkAgainst(const std::string& op, const std::string& shape, const std::string& dtype, const Twin& refOut,
                    const Twin& gotOut, double bound) {
    cuda_.synchronize();
    const std::vector<float> ref = refOut.hostFloats();
    const std::vector<float> got = gotOut.deviceFloats();
    AFD_CHECK(ref.size() == got.size(), "conformance " << op << ": reference and result differ in size");
    ConformanceCase c{op, shape, dtype};
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      if (std::isnan(got[i])) {
        ++c.unwritten;
        continue;
      }
      num += (static_cast<double>(got[i]) - ref[i]) * (static_cast<double>(got[i]) - ref[i]);
      den += static_cast<double>(ref[i]) * ref[i];
    }
    c.relError = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    c.bound = bound;
    c.passed = c.unwritten == 0 && c.relError <= bound;
    results_.push_back(c);
  }
  void checkExact(const std::string& op, const std::string& shape, const std::vector<int32_t>& ref,
                  const std::vector<int32_t>& got) {
    ConformanceCase c{op, shape, "i32"};
    for (size_t i = 0; i < ref.size(); ++i) c.mismatches += ref[i] != got[i] ? 1 : 0;
    c.passed = c.mismatches == 0 && ref.size() == got.size();
    results_.push_back(c);
  }

  CudaBackend cuda_;
  CpuBackend cpu_;
  std::mt19937_64 rng_;
  std::vector<ConformanceCase> results_;
};

// E random SiLU-gated experts (gate and up [I, H], down [H, I], bf16 in [-0.2, 0.2]) as
// twins, and the per-expert weight tables of each backend pointing into them.
struct ExpertTwins {
  std::vector<Twin> weights;  // 3 per expert; reserved up front, so the tables' pointers stay valid
  std::vector<ExpertWeights> cpu, gpu;
};

inline ExpertTwins randomExperts(Suite& s, int E, int64_t H, int64_t I) {
  ExpertTwins x;
  x.weights.reserve(3 * E);
  x.cpu.resize(E);
  x.gpu.resize(E);
  for (int e = 0; e < E; ++e) {
    x.weights.push_back(s.random(DType::BF16, {I, H}, -0.2f, 0.2f));
    x.weights.push_back(s.random(DType::BF16, {I, H}, -0.2f, 0.2f));
    x.weights.push_back(s.random(DType::BF16, {H, I}, -0.2f, 0.2f));
    Twin* t = &x.weights[x.weights.size() - 3];
    x.cpu[e] = ExpertWeights{t[0].cpu(), t[1].cpu(), t[2].cpu()};
    x.gpu[e] = ExpertWeights{t[0].gpu(), t[1].gpu(), t[2].gpu()};
  }
  return x;
}

inline std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

void normOps(Suite& s);        // conformance.cc
void attentionOps(Suite& s);   // conformance-attention.cc
void matmulOps(Suite& s);      // conformance-matmul.cc
void activationOps(Suite& s);  // conformance-activations.cc: bf16 activations, fused ops, dummy fill
void deepseekOps(Suite& s);    // conformance-deepseek.cc: MLA, grouped routing, bf16 add
void logitOps(Suite& s);       // conformance-logits.cc: bias and penalties, the token mask, min-p, log-probabilities
void linearAttentionOps(Suite& s);  // conformance-linear.cc: Gated DeltaNet conv, delta rule, gated norm, gating

}  // namespace afd::cuda::conformance
