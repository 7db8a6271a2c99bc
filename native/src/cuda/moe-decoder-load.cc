// MoeDecoder::loadWeights: checkpoint tensors (validated byte ranges of safetensors files)
// into the decoder's bf16 arena.
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>
#include <vector>

#include "cuda/cuda-check.h"
#include "cuda/moe-decoder.h"

namespace afd::cuda {

void MoeDecoder::loadWeights(const ModelLoadSpec& spec) {
  std::set<std::string> loaded;
  std::vector<char> bytes;
  std::vector<uint16_t> bf16;
  for (const TensorRef& t : spec.tensors) {
    auto it = named_.find(t.name);
    if (it == named_.end()) {
      throw std::invalid_argument("MoeDecoder: checkpoint tensor " + t.name +
                                  " has no place in the fused decoder (unsupported layout); use the engine path");
    }
    size_t elements = 1;
    for (int64_t d : t.shape) elements *= static_cast<size_t>(d);
    if (elements != it->second.elements) {
      throw std::invalid_argument("MoeDecoder: tensor " + t.name + " has " + std::to_string(elements) +
                                  " elements, the model config expects " + std::to_string(it->second.elements));
    }
    std::ifstream file(spec.files.at(t.file), std::ios::binary);
    if (!file) throw std::runtime_error("MoeDecoder: cannot open " + spec.files.at(t.file));
    bytes.resize(t.byteLength);
    file.seekg(static_cast<std::streamoff>(t.offset));
    file.read(bytes.data(), static_cast<std::streamsize>(t.byteLength));
    if (!file) throw std::runtime_error("MoeDecoder: short read of " + t.name + " from " + spec.files.at(t.file));
    bf16.resize(elements);
    if (t.dtype == DType::BF16) {
      std::memcpy(bf16.data(), bytes.data(), 2 * elements);
    } else {
      for (size_t i = 0; i < elements; ++i) {
        float v;
        if (t.dtype == DType::F32) {
          std::memcpy(&v, bytes.data() + 4 * i, 4);
        } else {
          uint16_t h;
          std::memcpy(&h, bytes.data() + 2 * i, 2);
          v = f16ToF32(h);
        }
        bf16[i] = f32ToBf16(v);
      }
    }
    AFD_CUDA_CHECK(cudaMemcpyAsync(it->second.data, bf16.data(), 2 * elements, cudaMemcpyHostToDevice, stream_));
    AFD_CUDA_CHECK(cudaStreamSynchronize(stream_));  // bf16 is reused for the next tensor
    loaded.insert(t.name);
  }
  // Every arena piece must have come from the checkpoint (fused pieces are covered by parts).
  for (const auto& [name, ref] : named_) {
    if (name.rfind("__", 0) == 0 || name.find(".qkv") != std::string::npos) continue;
    if (name.find("mlp.experts.gate") != std::string::npos || name.find("mlp.experts.up") != std::string::npos ||
        name.find("mlp.experts.down") != std::string::npos) {
      continue;
    }
    if (!loaded.count(name)) {
      throw std::invalid_argument("MoeDecoder: the checkpoint lacks " + name + " (q/k norms are required: qkNorm)");
    }
  }
}

}  // namespace afd::cuda
