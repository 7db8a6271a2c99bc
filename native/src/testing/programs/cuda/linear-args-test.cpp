// Unit tests of gatedMlpDownArgs (cuda/linear-args.h): the down GEMM that every SiLU-gated
// MLP of the CUDA backend and fused decoder derives from its gate/up GEMM. Built and run
// by cuda/linearArgs.test.ts (no GPU needed).
#include "cuda/linear-args.h"
#include "testing/programs/harness.h"

using namespace afd::cuda;

namespace {

// Distinct fake device addresses; only their identity matters here.
template <typename T = void>
T* fake(uintptr_t a) {
  return reinterpret_cast<T*>(a);
}

}  // namespace

// The fused decoder and the expert-GEMM bench: bf16 activations, contiguous expert weights.
TEST(grouped_strided_bf16_keeps_groups_and_stride) {
  LinearArgs gu;
  gu.x = fake(0x100);
  gu.xRowIndex = fake<const int32_t>(0x200);
  gu.w = fake(0x300);
  gu.wUp = fake(0x400);
  gu.groupStride = 768 * 2048;
  gu.groupOffsets = fake<const int32_t>(0x500);
  gu.activeGroups = fake<const int32_t>(0x600);
  gu.rows = 64 * 8;
  gu.n = 768;
  gu.k = 2048;
  gu.out = fake(0x700);
  gu.ldOut = 768;
  gu.epilogue = Epilogue::SiluMulBf16;
  const LinearArgs d = gatedMlpDownArgs(gu, DownWeights{fake(0x800)}, fake(0x900));
  CHECK(d.x == gu.out && !d.xIsF32 && d.xRowIndex == nullptr);
  CHECK(d.w == fake(0x800) && d.wUp == nullptr && d.wTable == nullptr && d.wUpTable == nullptr);
  CHECK(d.groupStride == gu.groupStride && d.wDtype == 2);
  CHECK(d.groupOffsets == gu.groupOffsets && d.activeGroups == gu.activeGroups && d.rows == gu.rows);
  CHECK(d.n == 2048 && d.k == 768 && d.out == fake(0x900) && d.ldOut == 2048);
  CHECK(d.epilogue == Epilogue::StoreF32);
}

// CudaBackend::moeExperts: f32 activations, per-expert pointer tables, its own down dtype.
TEST(grouped_tables_f32_use_the_down_table_and_dtype) {
  const void* const* tables = fake<const void* const>(0x1000);
  LinearArgs gu;
  gu.x = fake(0x100);
  gu.xIsF32 = true;
  gu.wTable = tables;
  gu.wUpTable = tables + 4;
  gu.wDtype = 2;
  gu.groupOffsets = fake<const int32_t>(0x500);
  gu.activeGroups = fake<const int32_t>(0x600);
  gu.rows = 10;
  gu.n = 36;
  gu.k = 20;
  gu.out = fake(0x700);
  gu.ldOut = 36;
  gu.epilogue = Epilogue::SiluMulF32;
  const LinearArgs d = gatedMlpDownArgs(gu, DownWeights{nullptr, tables + 8, 1}, fake(0x900));
  CHECK(d.x == gu.out && d.xIsF32);
  CHECK(d.wTable == tables + 8 && d.wUpTable == nullptr && d.w == nullptr && d.wUp == nullptr && d.wDtype == 1);
  CHECK(d.groupOffsets == gu.groupOffsets && d.activeGroups == gu.activeGroups);
  CHECK(d.n == 20 && d.k == 36 && d.ldOut == 20 && d.out == fake(0x900));
}

// CudaBackend::siluGatedMlp: one dense group.
TEST(dense_keeps_rows_and_no_groups) {
  LinearArgs gu;
  gu.x = fake(0x100);
  gu.xIsF32 = true;
  gu.w = fake(0x300);
  gu.wUp = fake(0x400);
  gu.wDtype = 1;
  gu.rows = 7;
  gu.n = 36;
  gu.k = 20;
  gu.out = fake(0x700);
  gu.ldOut = 36;
  gu.epilogue = Epilogue::SiluMulF32;
  const LinearArgs d = gatedMlpDownArgs(gu, DownWeights{fake(0x800), nullptr, 1}, fake(0x900));
  CHECK(d.rows == 7 && d.groupOffsets == nullptr && d.activeGroups == nullptr && d.groupStride == 0);
  CHECK(d.x == gu.out && d.xIsF32 && d.w == fake(0x800) && d.wDtype == 1);
  CHECK(d.n == 20 && d.k == 36 && d.ldOut == 20 && d.epilogue == Epilogue::StoreF32);
}

int main(int argc, char** argv) { return afdtest::runAll(argc, argv); }

// Dense MLP with bf16 activations (the engine on CUDA): the down GEMM stores bf16.
TEST(dense_bf16_out_stores_bf16) {
  LinearArgs gu;
  gu.x = fake(0x100);
  gu.w = fake(0x300);
  gu.wUp = fake(0x400);
  gu.rows = 5;
  gu.n = 96;
  gu.k = 64;
  gu.out = fake(0x700);
  gu.ldOut = 96;
  gu.epilogue = Epilogue::SiluMulBf16;
  DownWeights down{fake(0x800)};
  down.outBf16 = true;
  const LinearArgs d = gatedMlpDownArgs(gu, down, fake(0x900));
  CHECK(d.x == gu.out && !d.xIsF32 && d.n == 64 && d.k == 96 && d.ldOut == 64);
  CHECK(d.epilogue == Epilogue::StoreBf16);
}
