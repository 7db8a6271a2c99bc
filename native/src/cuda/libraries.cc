#include "cuda/libraries.h"

namespace afd::cuda {

const std::vector<std::string>& cublasNames() {
  static const std::vector<std::string> names = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  return names;
}
const std::vector<std::string>& cublasLtNames() {
  static const std::vector<std::string> names = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  return names;
}
const std::vector<std::string>& ncclNames() {
  static const std::vector<std::string> names = {"libnccl.so.2", "libnccl.so"};
  return names;
}

const DynLib& cublasLibrary() {
  static const DynLib lib = DynLib::open("cuBLAS (libcublas)", cublasNames());
  return lib;
}
const DynLib& cublasLtLibrary() {
  static const DynLib lib = DynLib::open("cuBLASLt (libcublasLt)", cublasLtNames());
  return lib;
}
const DynLib& ncclLibrary() {
  static const DynLib lib = DynLib::open("NCCL (libnccl)", ncclNames());
  return lib;
}

}  // namespace afd::cuda
