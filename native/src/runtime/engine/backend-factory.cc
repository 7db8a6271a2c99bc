// createBackend: the one place that knows which backends are compiled in.
#include "core/backend.h"
#include "cpu/cpu-backend.h"
#include "testing/capture-emulation-backend.h"

namespace afd {

#ifdef AFD_WITH_CUDA
// Implemented by the CUDA backend (cuda/); weak so the addon still loads (and says so
// clearly) while the CUDA backend is not built in yet.
__attribute__((weak)) std::unique_ptr<Backend> createCudaBackend(const BackendOptions& options);
#endif

std::unique_ptr<Backend> createBackend(const BackendOptions& options) {
  if (options.name == "cpu") return std::make_unique<CpuBackend>(options.threads);
  // Tests: the CPU backend with CUDA-graph capture emulated (testing/capture-emulation-backend.h).
  if (options.name == "cpu-graphs") return createCaptureEmulationBackend(options.threads);
#ifdef AFD_WITH_CUDA
  if (options.name == "cuda") {
    AFD_CHECK(createCudaBackend != nullptr, "this build has CUDA code but no CUDA backend yet (createCudaBackend is missing); use cpu");
    return createCudaBackend(options);
  }
  AFD_FAIL("unknown backend \"" << options.name << "\" (compiled: cpu, cuda)");
#else
  AFD_FAIL("backend \"" << options.name << "\" is not available in this build (compiled: cpu); "
                        << (options.name == "cuda" ? "rebuild the addon with AFD_CUDA=on on a machine with nvcc" : "use cpu"));
#endif
}

}  // namespace afd
