// Run-time loading of shared libraries (cuBLAS, cuBLASLt, NCCL) so that the addon
// neither links them nor needs their headers at build time.
#pragma once
#include <string>
#include <vector>

namespace afd {

class DynLib {
 public:
  // Tries each candidate soname in order. On failure, `error()` names the library
  // (`what`) and every name tried, with dlerror()'s reason.
  static DynLib open(const std::string& what, const std::vector<std::string>& candidates);

  DynLib() = default;
  DynLib(DynLib&& other) noexcept;
  DynLib& operator=(DynLib&& other) noexcept;
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;
  ~DynLib();

  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  const std::string& loadedName() const { return loadedName_; }

  // Returns nullptr when the symbol is missing.
  void* rawSymbol(const char* name) const;
  template <typename Fn>
  Fn symbol(const char* name) const { return reinterpret_cast<Fn>(rawSymbol(name)); }

 private:
  void* handle_ = nullptr;
  std::string error_;
  std::string loadedName_;
};

}  // namespace afd
