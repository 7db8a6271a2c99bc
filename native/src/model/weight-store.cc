#include "model/weight-store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/dummy-weights.h"
#include "model/unit-offset-norm.h"

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

// The slot exists in the model: a layer in range, an expert index only for an expert slot.
void checkSlot(const TensorRef& ref, const ModelConfig& c) {
  const SlotRef& s = ref.slot;
  AFD_CHECK(!s.slot.empty(), "tensor " << ref.name << " has no slot");
  AFD_CHECK(s.layer >= -1 && s.layer < c.numLayers,
            "tensor " << ref.name << " binds layer " << s.layer << " of a model with " << c.numLayers << " layers");
  AFD_CHECK(s.expert >= -1 && s.expert < c.numExperts && (s.expert < 0 || s.layer >= 0),
            "tensor " << ref.name << " binds expert " << s.expert << " (layer " << s.layer << ") of a model with "
                      << c.numExperts << " routed experts per MoE layer");
}

}  // namespace

WeightStore::WeightStore(const ModelLoadSpec& spec, Backend& backend, const std::vector<FusedTensor>& fused) {
  files_.reserve(spec.files.size());
  for (const auto& path : spec.files) files_.emplace_back(path);
  std::unordered_map<std::string, const TensorRef*> refs;  // by slot key
  for (const TensorRef& ref : spec.tensors) {
    checkRef(ref, files_);
    checkSlot(ref, spec.config);
    const std::string key = ref.slot.key();
    AFD_CHECK(refs.emplace(key, &ref).second, "slot " << key << " is filled twice in the load spec (" << refs.at(key)->name << ", " << ref.name << ")");
    residentBytes_ += ref.byteLength;
  }
  // Which group (if any) holds each tensor; groups keep their members' order.
  std::unordered_map<std::string, const FusedTensor*> groupOf;
  std::vector<const FusedTensor*> groups;
  for (const FusedTensor& g : fused) {
    bool complete = !g.members.empty();
    for (const SlotRef& m : g.members) complete = complete && refs.count(m.key()) != 0;
    if (!complete) continue;
    const TensorRef& first = *refs.at(g.members.front().key());
    for (const SlotRef& m : g.members) {
      const TensorRef& r = *refs.at(m.key());
      bool same = r.dtype == first.dtype && r.shape.size() == first.shape.size();
      for (size_t d = 1; same && d < r.shape.size(); ++d) same = r.shape[d] == first.shape[d];
      AFD_CHECK(same, "fused slot " << g.slot.key() << ": " << r.name << " does not match " << first.name << " in dtype or trailing dims");
      AFD_CHECK(groupOf.emplace(m.key(), &g).second, "slot " << m.key() << " is in two fused groups");
    }
    groups.push_back(&g);
  }
  // Arena slots: everything on a device backend; dummy, fused and (1 + weight) norm
  // tensors on the CPU (checkpoint tensors there stay zero-copy views of the mapped files).
  auto unitOffset = [&](const TensorRef& r) { return spec.config.normUnitOffset && isUnitOffsetNormSlot(r.slot.slot); };
  auto needsSlot = [&](const TensorRef& r) {
    return !backend.sharesHostMemory() || r.file == kDummyFile || groupOf.count(r.slot.key()) != 0 || unitOffset(r);
  };
  uint64_t arenaBytes = 0;
  for (const TensorRef& r : spec.tensors)
    if (needsSlot(r) && groupOf.count(r.slot.key()) == 0) arenaBytes += alignUp(unitOffset(r) ? r.byteLength / dtypeBytes(r.dtype) * 4 : r.byteLength);
  uint64_t reorderBytes = 0;  // staging for the largest reordered group
  for (const FusedTensor* g : groups) {
    uint64_t bytes = 0;
    for (const SlotRef& m : g->members) bytes += refs.at(m.key())->byteLength;
    arenaBytes += alignUp(bytes);
    if (!g->rowOrder.empty()) reorderBytes = std::max(reorderBytes, bytes);
  }
  Buffer staging(&backend, reorderBytes);
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
    tensors_.emplace(r.slot.key(), Entry{t, r.name});
  };
  for (const FusedTensor* g : groups) {
    uint8_t* start = cursor;
    // A reordered group is concatenated in the staging buffer first, then its rows copied
    // over in runs; its members exist only through the group (their staging copies go).
    uint8_t* concat = g->rowOrder.empty() ? start : static_cast<uint8_t*>(staging.data());
    int64_t rows = 0;
    std::string names;
    for (const SlotRef& m : g->members) {
      const TensorRef& r = *refs.at(m.key());
      place(r, concat);
      concat += r.byteLength;
      cursor += r.byteLength;
      rows += r.shape[0];
      names += (names.empty() ? "" : " + ") + r.name;
    }
    if (!g->rowOrder.empty()) {
      AFD_CHECK(static_cast<int64_t>(g->rowOrder.size()) == rows, "fused slot " << g->slot.key() << " (" << names << ") has " << rows
                                                                                << " rows but the config implies " << g->rowOrder.size());
      const uint64_t rowBytes = static_cast<uint64_t>(cursor - start) / static_cast<uint64_t>(rows);
      const auto* src = static_cast<const uint8_t*>(staging.data());
      for (int64_t r = 0; r < rows;) {
        int64_t run = 1;  // consecutive source rows copy as one
        while (r + run < rows && g->rowOrder[r + run] == g->rowOrder[r] + run) ++run;
        AFD_CHECK(g->rowOrder[r] >= 0 && g->rowOrder[r] + run <= rows, "fused slot " << g->slot.key() << ": row order out of range");
        backend.copyDevice(start + r * rowBytes, src + g->rowOrder[r] * rowBytes, run * rowBytes);
        r += run;
      }
      for (const SlotRef& m : g->members) {
        tensors_.erase(m.key());
        bound_.insert(m.key());
      }
    }
    TensorRef whole = *refs.at(g->members.front().key());
    whole.shape[0] = rows;
    const std::string key = g->slot.key();
    AFD_CHECK(!tensors_.count(key), "fused slot " << key << " collides with a tensor of the spec");
    tensors_.emplace(key, Entry{tensorOf(whole, start, device), names});
    cursor = start + alignUp(static_cast<uint64_t>(cursor - start));
  }
  for (const TensorRef& r : spec.tensors) {
    if (groupOf.count(r.slot.key()) != 0) continue;
    if (!needsSlot(r)) {
      tensors_.emplace(r.slot.key(), Entry{tensorOf(r, const_cast<uint8_t*>(files_[r.file].data() + r.offset), Device{}), r.name});
      continue;
    }
    if (unitOffset(r)) {
      const std::vector<float> w = unitOffsetNormValues(r, r.file == kDummyFile ? nullptr : files_[r.file].data() + r.offset, spec.dummySeed);
      backend.copyToDevice(cursor, w.data(), w.size() * sizeof(float));
      TensorRef f32 = r;
      f32.dtype = DType::F32;
      tensors_.emplace(r.slot.key(), Entry{tensorOf(f32, cursor, device), r.name + " (1 + weight)"});
      cursor += alignUp(w.size() * sizeof(float));
      continue;
    }
    place(r, cursor);
    cursor += alignUp(r.byteLength);
  }
  backend.synchronize();
}

Tensor WeightStore::find(const SlotRef& slot, std::initializer_list<int64_t> shape) const {
  const std::string key = slot.key();
  auto it = tensors_.find(key);
  if (it == tensors_.end()) return Tensor{};
  const Tensor& t = it->second.tensor;
  bool ok = t.ndim == static_cast<int>(shape.size());
  int i = 0;
  for (int64_t d : shape) ok = ok && t.dims[i++] == d;
  if (!ok) {
    std::string want = "[";
    i = 0;
    for (int64_t d : shape) want += (i++ ? ", " : "") + std::to_string(d);
    AFD_FAIL("tensor " << it->second.name << " (slot " << key << ") has shape " << t.shapeString() << " but the config implies " << want
                       << "]");
  }
  bound_.insert(key);
  return t;
}

Tensor WeightStore::get(const SlotRef& slot, std::initializer_list<int64_t> shape) const {
  Tensor t = find(slot, shape);
  AFD_CHECK(!t.empty() || shape.size() == 0, "slot " << slot.key() << " is required for this role but the load spec does not fill it");
  return t;
}

std::vector<std::string> WeightStore::unboundTensors() const {
  std::vector<std::string> out;
  for (const auto& [key, entry] : tensors_)
    if (bound_.count(key) == 0) out.push_back(key + " (" + entry.name + ")");
  std::sort(out.begin(), out.end());
  return out;
}

void WeightStore::checkAllBound(const char* role) const {
  const std::vector<std::string> unbound = unboundTensors();
  if (unbound.empty()) return;
  std::string list;
  for (size_t i = 0; i < unbound.size() && i < 4; ++i) list += (i ? ", " : "") + unbound[i];
  AFD_FAIL("the load spec fills " << unbound.size() << " slot(s) no module of the " << role << " role binds: " << list
                                  << (unbound.size() > 4 ? ", ..." : "")
                                  << "; the layer's kinds have no such slot (see TensorSlot in native/src/modelSpec.ts)");
}

}  // namespace afd
