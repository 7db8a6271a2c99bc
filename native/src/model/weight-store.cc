#include "model/weight-store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/dummy-weights.h"

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

namespace {

constexpr uint64_t kArenaAlign = 256;
uint64_t alignUp(uint64_t n) { return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

void checkRef(const TensorRef& ref, const std::vector<MappedFile>& files) {
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
  if (ref.file == kDummyFile) return;
  AFD_CHECK(ref.file >= 0 && ref.file < static_cast<int>(files.size()),
            "tensor " << ref.name << " names file index " << ref.file << " but the spec has " << files.size() << " files");
  const MappedFile& f = files[ref.file];
  AFD_CHECK(ref.offset <= f.size() && ref.byteLength <= f.size() - ref.offset,
            "tensor " << ref.name << " [" << ref.offset << ", " << ref.offset + ref.byteLength << ") lies outside "
                      << f.path() << " (" << f.size() << " bytes)");
  AFD_CHECK(ref.dtype != DType::F32 || ref.offset % 4 == 0 || ref.byteLength == 0,
            "tensor " << ref.name << " (f32) starts at unaligned offset " << ref.offset);
  AFD_CHECK(ref.dtype == DType::F32 || ref.offset % 2 == 0, "tensor " << ref.name << " starts at odd offset " << ref.offset);
}

Tensor tensorOf(const TensorRef& ref, void* data, Device device) {
  Tensor t;
  t.dtype = ref.dtype;
  t.ndim = static_cast<int>(ref.shape.size());
  for (int i = 0; i < t.ndim; ++i) t.dims[i] = ref.shape[i];
  t.data = data;
  t.device = device;
  return t;
}

}  // namespace

WeightStore::WeightStore(const ModelLoadSpec& spec, Backend& backend, const std::vector<FusedTensor>& fused) {
  files_.reserve(spec.files.size());
  for (const auto& path : spec.files) files_.emplace_back(path);
  std::unordered_map<std::string, const TensorRef*> refs;
  for (const TensorRef& ref : spec.tensors) {
    checkRef(ref, files_);
    AFD_CHECK(refs.emplace(ref.name, &ref).second, "tensor " << ref.name << " appears twice in the load spec");
    residentBytes_ += ref.byteLength;
  }
  // Which group (if any) holds each tensor; groups keep their members' order.
  std::unordered_map<std::string, const FusedTensor*> groupOf;
  std::vector<const FusedTensor*> groups;
  for (const FusedTensor& g : fused) {
    bool complete = !g.members.empty();
    for (const std::string& m : g.members) complete = complete && refs.count(m) != 0;
    if (!complete) continue;
    const TensorRef& first = *refs.at(g.members.front());
    for (const std::string& m : g.members) {
      const TensorRef& r = *refs.at(m);
      bool same = r.dtype == first.dtype && r.shape.size() == first.shape.size();
      for (size_t d = 1; same && d < r.shape.size(); ++d) same = r.shape[d] == first.shape[d];
      AFD_CHECK(same, "fused tensor " << g.name << ": " << m << " does not match " << first.name << " in dtype or trailing dims");
      AFD_CHECK(groupOf.emplace(m, &g).second, "tensor " << m << " is in two fused groups");
    }
    groups.push_back(&g);
  }
  // Arena slots: everything on a device backend; dummy and fused tensors on the CPU
  // (checkpoint tensors there stay zero-copy views of the mapped files).
  auto needsSlot = [&](const TensorRef& r) {
    return !backend.sharesHostMemory() || r.file == kDummyFile || groupOf.count(r.name) != 0;
  };
  uint64_t arenaBytes = 0;
  for (const TensorRef& r : spec.tensors)
    if (needsSlot(r) && groupOf.count(r.name) == 0) arenaBytes += alignUp(r.byteLength);
  for (const FusedTensor* g : groups) {
    uint64_t bytes = 0;
    for (const std::string& m : g->members) bytes += refs.at(m)->byteLength;
    arenaBytes += alignUp(bytes);
  }
  arena_ = Buffer(&backend, arenaBytes);
  uint8_t* cursor = static_cast<uint8_t*>(arena_.data());
  const Device device = backend.sharesHostMemory() ? Device{} : backend.device();
  // Fills `dst` with the tensor's values (generated, uploaded or copied from the mapping).
  auto place = [&](const TensorRef& r, uint8_t* dst) {
    Tensor t = tensorOf(r, dst, device);
    if (r.file == kDummyFile) {
      backend.fillRandom(t, dummyTensorKey(spec.dummySeed, r.name), r.dummyScale, r.dummyOffset);
    } else {
      backend.copyToDevice(dst, files_[r.file].data() + r.offset, r.byteLength);
    }
    tensors_.emplace(r.name, t);
  };
  for (const FusedTensor* g : groups) {
    uint8_t* start = cursor;
    int64_t rows = 0;
    for (const std::string& m : g->members) {
      const TensorRef& r = *refs.at(m);
      place(r, cursor);
      cursor += r.byteLength;
      rows += r.shape[0];
    }
    TensorRef whole = *refs.at(g->members.front());
    whole.name = g->name;
    whole.shape[0] = rows;
    AFD_CHECK(!tensors_.count(g->name), "fused tensor " << g->name << " collides with a tensor of the spec");
    tensors_.emplace(g->name, tensorOf(whole, start, device));
    cursor = start + alignUp(static_cast<uint64_t>(cursor - start));
  }
  for (const TensorRef& r : spec.tensors) {
    if (groupOf.count(r.name) != 0) continue;
    if (!needsSlot(r)) {
      tensors_.emplace(r.name, tensorOf(r, const_cast<uint8_t*>(files_[r.file].data() + r.offset), Device{}));
      continue;
    }
    place(r, cursor);
    cursor += alignUp(r.byteLength);
  }
  backend.synchronize();
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
