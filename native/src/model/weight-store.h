// Weights of one role: the checkpoint byte ranges named by the ModelLoadSpec,
// memory-mapped read-only (zero copy on the CPU backend; uploaded once into one device
// arena on others), and dummy tensors generated in place (--load-format dummy). Fused
// groups (a layer's q/k/v projections, read by one GEMM) are stored back to back, so the
// group is one tensor too. Lookup by slot (model/slots.h); the store remembers which
// tensors a module bound, so a tensor no module asked for is an error, not dead weight.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
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

// Tensors stored back to back in a new slot: rows of the members concatenated (same
// dtype and trailing dims). A group whose members are not all in the spec is skipped.
// rowOrder, when given, reorders the concatenation: fused row r is its row rowOrder[r]
// (Qwen3-Next's q_proj interleaves query and gate rows per head; the fused slot
// regroups them so each part is one contiguous block of rows). The members of a
// reordered group are then read only through it: their own slots are not kept.
struct FusedTensor {
  SlotRef slot;
  std::vector<SlotRef> members;
  std::vector<int64_t> rowOrder;
};

class WeightStore {
 public:
  // Maps every file and checks every tensor range (inside the file, bytes == shape x
  // dtype); uploads or generates what the backend needs in its memory. With
  // config.normUnitOffset the norm slots (model/unit-offset-norm.h) hold f32 1 + weight.
  WeightStore(const ModelLoadSpec& spec, Backend& backend, const std::vector<FusedTensor>& fused = {});

  // The slot's tensor, checked against the expected shape; throws naming the slot (and
  // the tensor) when the spec does not fill it or fills it with another shape.
  Tensor get(const SlotRef& slot, std::initializer_list<int64_t> shape) const;
  // Like get, but returns an empty tensor when the spec does not fill the slot.
  Tensor find(const SlotRef& slot, std::initializer_list<int64_t> shape) const;
  // The spec's tensors no get() / find() asked for (slot key and name), after the model
  // is built: a slot the layer's kinds do not have.
  std::vector<std::string> unboundTensors() const;
  // Throws naming them when there are any (role: for the message).
  void checkAllBound(const char* role) const;

  // Bytes of the weights this role holds (device bytes; on the CPU the mapped ranges).
  uint64_t residentBytes() const { return residentBytes_; }
  size_t numTensors() const { return tensors_.size(); }

 private:
  std::vector<MappedFile> files_;
  Buffer arena_;  // uploaded, generated and fused tensors (256-byte aligned slots)
  struct Entry {
    Tensor tensor;
    std::string name;  // the checkpoint's name, for messages
  };
  std::unordered_map<std::string, Entry> tensors_;  // by SlotRef::key()
  mutable std::unordered_set<std::string> bound_;   // keys get() / find() returned
  uint64_t residentBytes_ = 0;
};

}  // namespace afd
