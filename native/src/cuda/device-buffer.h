// Owning device allocation. Out-of-memory is an error that names what did not fit,
// how much it asked for and how much the device had free.
#pragma once
#include <cstddef>
#include <string>

namespace afd::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // `what` names the allocation in errors, e.g. "KV cache pool (48 layers)".
  DeviceBuffer(const std::string& what, size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void release();
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Free and total device memory of the current device, bytes.
void deviceMemoryInfo(size_t& freeBytes, size_t& totalBytes);

}  // namespace afd::cuda
