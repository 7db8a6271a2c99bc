#include "cuda/cuda-backend.h"

namespace afd::cuda {

CudaBackend::CudaBackend(int deviceIndex, const CudaOptions& options)
    : ctx_(deviceIndex, options),
      memory_(ctx_),
      rows_(ctx_, memory_),
      sampling_(ctx_, memory_),
      attention_(ctx_, memory_),
      linear_(ctx_, memory_),
      moe_(ctx_, memory_, linear_),
      deepseek_(ctx_, memory_),
      linearAttention_(ctx_) {}

// The op families free their buffers (and the cuBLAS handle) once the stream's work is
// done; the stream goes last (StreamContext's destructor).
CudaBackend::~CudaBackend() {
  if (ctx_.stream() != nullptr) cudaStreamSynchronize(ctx_.stream());
}

}  // namespace afd::cuda
