// Weights of one role: the checkpoint byte ranges named by the ModelLoadSpec,
// memory-mapped read-only (zero copy on the CPU backend; uploaded once to device memory
// on others). Lookup by HF tensor name.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/backend.h"
#include "model/model-config.h"

namespace afd {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  MappedFile(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile& operator=(MappedFile&&) = delete;
  ~MappedFile();
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

class WeightStore {
 public:
  // Maps every file and checks every tensor range (inside the file, bytes == shape x dtype).
  WeightStore(const ModelLoadSpec& spec, Backend& backend);

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor, checked against the expected shape; throws naming the tensor when it is
  // missing from the spec or has another shape.
  Tensor get(const std::string& name, std::initializer_list<int64_t> shape) const;
  // Like get, but returns an empty tensor when the spec does not contain it.
  Tensor find(const std::string& name, std::initializer_list<int64_t> shape) const;

  // Bytes of the weights this role holds (device bytes; on the CPU the mapped ranges).
  uint64_t residentBytes() const { return residentBytes_; }
  size_t numTensors() const { return tensors_.size(); }

 private:
  std::vector<MappedFile> files_;
  std::vector<Buffer> deviceCopies_;  // backends that do not share host memory
  std::unordered_map<std::string, Tensor> tensors_;
  uint64_t residentBytes_ = 0;
};

}  // namespace afd
