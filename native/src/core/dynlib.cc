#include "core/dynlib.h"

#include <dlfcn.h>

namespace afd {

DynLib DynLib::open(const std::string& what, const std::vector<std::string>& candidates) {
  DynLib lib;
  std::string reasons;
  for (const auto& name : candidates) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      lib.handle_ = handle;
      lib.loadedName_ = name;
      return lib;
    }
    const char* reason = dlerror();
    reasons += "\n  " + name + ": " + (reason != nullptr ? reason : "unknown error");
  }
  lib.error_ = what + " could not be loaded (tried:" + reasons +
               ")\nInstall it or add its directory to LD_LIBRARY_PATH.";
  return lib;
}

DynLib::DynLib(DynLib&& other) noexcept
    : handle_(other.handle_), error_(std::move(other.error_)), loadedName_(std::move(other.loadedName_)) {
  other.handle_ = nullptr;
}

DynLib& DynLib::operator=(DynLib&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = other.handle_;
    error_ = std::move(other.error_);
    loadedName_ = std::move(other.loadedName_);
    other.handle_ = nullptr;
  }
  return *this;
}

DynLib::~DynLib() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* DynLib::rawSymbol(const char* name) const {
  return handle_ != nullptr ? dlsym(handle_, name) : nullptr;
}

}  // namespace afd
