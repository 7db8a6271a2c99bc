// Row gather: the rows of a matrix picked by index (the sampled rows before the LM head).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace afd::cuda {

// out[s] = x[rows[s]]: x [*, width], out [numRows, width], elements of elemBytes (4 or 2).
void gatherRows(const void* x, const int32_t* rows, void* out, int numRows, int width, int elemBytes,
                cudaStream_t stream);

}  // namespace afd::cuda
