// Run-time loaded CUDA libraries. Only the few entry points we use are declared here,
// so the addon compiles on machines with nvcc but no cuBLAS/NCCL headers.
#pragma once
#include "core/dynlib.h"

namespace afd::cuda {

// Candidate sonames, newest first.
const std::vector<std::string>& cublasNames();
const std::vector<std::string>& cublasLtNames();
const std::vector<std::string>& ncclNames();

// Loaded once per process on first use; ok() false with a message naming the library.
const DynLib& cublasLibrary();
const DynLib& cublasLtLibrary();
const DynLib& ncclLibrary();

}  // namespace afd::cuda
