#include "cpu/shared-file-region.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace afd {
namespace {

constexpr const char* kPrefix = "afd-kv-";

std::string errnoText() { return std::strerror(errno); }

class FileRegion final : public SharedRegion {
 public:
  FileRegion(std::string path, void* data, size_t bytes, bool owner)
      : path_(std::move(path)), data_(data), bytes_(bytes), owner_(owner), handle_(path_.begin(), path_.end()) {}
  ~FileRegion() override {
    munmap(data_, bytes_);
    if (owner_) unlink(path_.c_str());
  }
  void* data() const override { return data_; }
  size_t bytes() const override { return bytes_; }
  const std::vector<uint8_t>& handle() const override { return handle_; }

 private:
  std::string path_;
  void* data_;
  size_t bytes_;
  bool owner_;
  std::vector<uint8_t> handle_;
};

// Removes `<dir>/afd-kv-<pid>-*` files whose process no longer runs (a killed rank's).
void removeStaleFiles(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(kPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + std::strlen(kPrefix), nullptr, 10);
    if (pid <= 0 || (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) unlink((dir + "/" + name).c_str());
  }
  closedir(d);
}

void* mapShared(int fd, size_t bytes, const std::string& path) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  AFD_CHECK(p != MAP_FAILED, "cannot map " << bytes << " bytes of " << path << " shared: " << errnoText());
  return p;
}

}  // namespace

std::unique_ptr<SharedRegion> createSharedFileRegion(size_t bytes, const std::string& dir) {
  AFD_CHECK(bytes > 0, "a shared region needs at least one byte");
  AFD_CHECK(!dir.empty(), "a shared KV region on the CPU needs a directory (kvShareDir)");
  removeStaleFiles(dir);
  std::string path = dir + "/" + kPrefix + std::to_string(getpid()) + "-XXXXXX";
  const int fd = mkstemp(path.data());
  AFD_CHECK(fd >= 0, "cannot create the shared KV file in " << dir << " (kvShareDir): " << errnoText());
  // The pages are allocated now, so a full disk fails here rather than as SIGBUS mid-step.
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    close(fd);
    unlink(path.c_str());
    AFD_FAIL("cannot size the shared KV file " << path << " to " << bytes << " bytes (kvShareDir " << dir
                                               << "): " << std::strerror(err));
  }
  void* data = nullptr;
  try {
    data = mapShared(fd, bytes, path);
  } catch (...) {
    close(fd);
    unlink(path.c_str());
    throw;
  }
  close(fd);  // the mapping keeps the pages
  std::memset(data, 0, bytes);
  return std::make_unique<FileRegion>(std::move(path), data, bytes, true);
}

std::unique_ptr<SharedRegion> openSharedFileRegion(const std::vector<uint8_t>& handle, size_t bytes) {
  const std::string path(handle.begin(), handle.end());
  AFD_CHECK(!path.empty() && path.find('\0') == std::string::npos, "a CPU shared-region handle must be a file path");
  const int fd = open(path.c_str(), O_RDWR);
  AFD_CHECK(fd >= 0, "cannot open the peer's shared KV file " << path << ": " << errnoText()
                                                              << " (is the peer on another host, or gone?)");
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    const long long size = static_cast<long long>(st.st_size);
    close(fd);
    AFD_FAIL("the peer's shared KV file " << path << " has " << size << " bytes, expected " << bytes);
  }
  void* data = nullptr;
  try {
    data = mapShared(fd, bytes, path);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return std::make_unique<FileRegion>(path, data, bytes, false);
}

}  // namespace afd
