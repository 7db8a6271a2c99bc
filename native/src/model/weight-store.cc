#include "model/weight-store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace afd {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  AFD_CHECK(fd >= 0, "cannot open checkpoint file " << path << ": " << std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    AFD_FAIL("cannot stat checkpoint file " << path << ": " << std::strerror(err));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ > 0) {
    // MAP_POPULATE: fault the pages in at load time, not during the first steps.
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    const int err = errno;
    ::close(fd);
    AFD_CHECK(p != MAP_FAILED, "cannot memory-map checkpoint file " << path << " (" << size_ << " bytes): " << std::strerror(err));
    data_ = static_cast<uint8_t*>(p);
  } else {
    ::close(fd);
  }
}

MappedFile::MappedFile(MappedFile&& o) noexcept : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

WeightStore::WeightStore(const ModelLoadSpec& spec, Backend& backend) {
  files_.reserve(spec.files.size());
  for (const auto& path : spec.files) files_.emplace_back(path);
  for (const TensorRef& ref : spec.tensors) {
    AFD_CHECK(ref.file >= 0 && ref.file < static_cast<int>(files_.size()),
              "tensor " << ref.name << " names file index " << ref.file << " but the spec has " << files_.size() << " files");
    const MappedFile& f = files_[ref.file];
    AFD_CHECK(ref.shape.size() >= 1 && ref.shape.size() <= kMaxDims,
              "tensor " << ref.name << " has rank " << ref.shape.size() << " (supported: 1.." << kMaxDims << ")");
    uint64_t numel = 1;
    for (int64_t d : ref.shape) {
      AFD_CHECK(d >= 0, "tensor " << ref.name << " has a negative dimension");
      numel *= static_cast<uint64_t>(d);
    }
    AFD_CHECK(numel * dtypeBytes(ref.dtype) == ref.byteLength,
              "tensor " << ref.name << ": " << ref.byteLength << " bytes do not match its shape and dtype ("
                        << numel * dtypeBytes(ref.dtype) << " expected)");
    AFD_CHECK(ref.offset <= f.size() && ref.byteLength <= f.size() - ref.offset,
              "tensor " << ref.name << " [" << ref.offset << ", " << ref.offset + ref.byteLength << ") lies outside "
                        << f.path() << " (" << f.size() << " bytes)");
    AFD_CHECK(ref.dtype != DType::F32 || ref.offset % 4 == 0 || ref.byteLength == 0,
              "tensor " << ref.name << " (f32) starts at unaligned offset " << ref.offset);
    AFD_CHECK(ref.dtype == DType::F32 || ref.offset % 2 == 0, "tensor " << ref.name << " starts at odd offset " << ref.offset);
    AFD_CHECK(!tensors_.count(ref.name), "tensor " << ref.name << " appears twice in the load spec");
    Tensor t;
    t.dtype = ref.dtype;
    t.ndim = static_cast<int>(ref.shape.size());
    for (int i = 0; i < t.ndim; ++i) t.dims[i] = ref.shape[i];
    t.data = const_cast<uint8_t*>(f.data() + ref.offset);
    if (!backend.sharesHostMemory()) {
      Buffer buf(&backend, ref.byteLength);
      backend.copyToDevice(buf.data(), t.data, ref.byteLength);
      t.data = buf.data();
      t.device = backend.device();
      deviceCopies_.push_back(std::move(buf));
    }
    residentBytes_ += ref.byteLength;
    tensors_.emplace(ref.name, t);
  }
}

Tensor WeightStore::find(const std::string& name, std::initializer_list<int64_t> shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return Tensor{};
  const Tensor& t = it->second;
  bool ok = t.ndim == static_cast<int>(shape.size());
  int i = 0;
  for (int64_t d : shape) ok = ok && t.dims[i++] == d;
  if (!ok) {
    std::string want = "[";
    i = 0;
    for (int64_t d : shape) want += (i++ ? ", " : "") + std::to_string(d);
    AFD_FAIL("tensor " << name << " has shape " << t.shapeString() << " but the config implies " << want << "]");
  }
  return t;
}

Tensor WeightStore::get(const std::string& name, std::initializer_list<int64_t> shape) const {
  Tensor t = find(name, shape);
  AFD_CHECK(!t.empty() || shape.size() == 0, "tensor " << name << " is required for this role but missing from the load spec");
  return t;
}

}  // namespace afd
