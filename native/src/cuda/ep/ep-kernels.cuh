// Kernels of the device-resident expert-parallel exchange (cuda/ep/ep-exchange-base.h):
// fixed-capacity sections, row counts and routing on the device only, so an FFN step
// that runs them replays as one CUDA graph.
//
// One (phase, stage) of a rank's blocks holds a section per source rank s, each `cap`
// rows long (cap = the group's largest stage row count of the step, <= capMax):
//   dispatch: counts [kEpMaxRanks] u32 | ids [F * cap, K] i32 | weights [F * cap, K] f32
//             | rows [F * cap, H]   (source s writes rows s * cap .. s * cap + count - 1)
//   combine:  rows [F * cap, H]    (owner d writes d * cap + slot: its partial sums)
// A token goes once to every rank that owns one of its experts (not once per expert):
// its row, its K expert ids (-1 for experts of other ranks) and its K routing weights.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace afd::cuda::ep {

constexpr int kEpMaxRanks = 32;

// Per-destination device pointers, passed by value (captured into graph nodes as is).
struct RankPointers {
  char* at[kEpMaxRanks];
};
struct RankFlags {
  unsigned long long* at[kEpMaxRanks];
};

// Byte offsets inside one dispatch block for a given capMax (fixed for the region).
struct DispatchLayout {
  size_t ids = 0, weights = 0, rows = 0, bytes = 0;
};
// Loads every kernel below now (lazy module loading would load them at a first launch,
// which synchronizes the context: see ep-kernels.cu).
void epPreload();

DispatchLayout dispatchLayout(int numRanks, int64_t capMax, int topK, size_t rowBytes);

struct PlanArgs {
  const int32_t* ids = nullptr;   // [T, K] routed expert ids
  const uint8_t* valid = nullptr; // [T] 1 = a token (0: placeholder or padding, not routed)
  int rows = 0;                   // T
  int topK = 0, numExperts = 0, numRanks = 0, rank = 0;
  int cap = 0;                    // section rows (>= rows)
  int32_t* slotOf = nullptr;      // [T, F] slot of token t in rank r's section, or -1
  int32_t* tokenAt = nullptr;     // [F, cap] token of each used slot
  int32_t* counts = nullptr;      // [F] used slots per destination
  unsigned long long* tokensPerExpert = nullptr;  // [E] or null: += pairs routed to each expert
  unsigned long long* rowsSent = nullptr;         // [1] or null: += rows sent to other ranks
};
void epPlan(const PlanArgs& a, cudaStream_t stream);

struct PackArgs {
  const void* x = nullptr;        // [T, H] rows of this rank
  const int32_t* ids = nullptr;   // [T, K]
  const float* weights = nullptr; // [T, K]
  const int32_t* tokenAt = nullptr;
  const int32_t* counts = nullptr;
  size_t rowBytes = 0;            // multiple of 16
  int topK = 0, numExperts = 0, numRanks = 0, rank = 0, cap = 0;
  DispatchLayout layout;
  RankPointers dst;               // dispatch block of (this stage) on every destination
  // false: write section `rank` of dst.at[d] (the owner's own block, transport peer);
  // true: section d (a local outbox that a transport sends from, transport nccl).
  bool sectionByDestination = false;
};
// Writes this rank's section into every destination's dispatch block (ids -1 past the count).
void epPack(const PackArgs& a, cudaStream_t stream);

// Bumps this rank's flag on every destination (after the writes the previous kernel made
// system-visible): seq[d] += 1, then *flags.at[d] = seq[d].
void epSignal(RankFlags flags, unsigned long long* seq, int numRanks, cudaStream_t stream);
// Waits until every source's flag reaches expected[s] + 1 (then stores it). A wait past
// timeoutNs stores 1 + s + numRanks * place into *error (place: the caller's code for
// where it waited); a nonzero *error (the host's abort) ends every wait.
void epWait(const unsigned long long* flags, unsigned long long* expected, int numRanks, unsigned long long timeoutNs,
            int place, volatile int* error, cudaStream_t stream);

struct ReturnArgs {
  const void* partial = nullptr;  // [F * cap, H] this rank's partial sums, by source section
  const uint32_t* counts = nullptr;  // dispatch block counts (rows each source sent here)
  size_t rowBytes = 0;
  int numRanks = 0, rank = 0, cap = 0;
  RankPointers dst;               // combine block (this stage) on every source; null: count only
  unsigned long long* rowsReceived = nullptr;  // [1] or null: += rows received from other ranks
};
// Copies each source's used rows back into section `rank` of the source's combine block
// (sources with a null block are only counted: the transport sends partial sums itself).
void epReturn(const ReturnArgs& a, cudaStream_t stream);

struct CombineArgs {
  const void* combine = nullptr;  // local combine block rows [F * cap, H]
  const int32_t* slotOf = nullptr;
  const uint8_t* valid = nullptr;
  const void* addend = nullptr;   // [T, H] or null (shared experts)
  void* out = nullptr;            // [T, H]
  int rows = 0, hidden = 0, numRanks = 0, cap = 0;
  bool bf16 = true;               // element type of combine / addend / out (else f32)
};
// out[t] = sum over ranks r (in rank order) of combine[r * cap + slotOf[t, r]] (+ addend);
// 0 for rows that are not tokens.
void epCombine(const CombineArgs& a, cudaStream_t stream);

}  // namespace afd::cuda::ep
