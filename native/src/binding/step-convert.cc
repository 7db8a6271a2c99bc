#include "binding/step-convert.h"

#include <limits>

#include "binding/js-fields.h"
#include "core/error.h"

namespace afd::binding {
namespace {

constexpr size_t kAnyLength = std::numeric_limits<size_t>::max();

// An integer plan field, checked into [lo, hi] before it narrows to int (a count past int32
// must be refused, never wrapped).
int planInt(const Napi::Object& p, const char* name, int64_t lo, int64_t hi) {
  const int64_t v = integer(p, "plan", name);
  AFD_CHECK(v >= lo && v <= hi, "plan." << name << " is " << v << "; expected an integer in [" << lo << ", " << hi << "]");
  return static_cast<int>(v);
}

// where.name: a typed array of Kind with expectLen elements (kAnyLength: any), copied into out.
template <typename T, napi_typedarray_type Kind>
void typed(const Napi::Object& o, const char* where, const char* name, size_t expectLen, std::vector<T>& out) {
  Napi::Value v = field(o, where, name);
  AFD_CHECK(v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == Kind,
            where << "." << name << " has the wrong type (see StepPlan in shared/src/engine/step.ts)");
  auto a = v.As<Napi::TypedArrayOf<T>>();
  AFD_CHECK(expectLen == kAnyLength || a.ElementLength() == expectLen,
            where << "." << name << " has " << a.ElementLength() << " elements, expected " << expectLen);
  AFD_CHECK(a.ElementLength() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
            where << "." << name << " has more than 2^31 - 1 elements");
  out.assign(a.Data(), a.Data() + a.ElementLength());
}

const auto i32 = typed<int32_t, napi_int32_array>;
const auto f32 = typed<float, napi_float32_array>;

// plan.extras: per-sequence arrays of numSeqs (+ 1 for offsets), lists of matching lengths;
// tokenMask when given (its length is validateStepExtras's: it needs the vocabulary).
void toStepExtras(const Napi::Object& x, size_t S, OwnedStepPlan& o) {
  const char* w = "plan.extras";
  f32(x, w, "presencePenalty", S, o.presencePenalty);
  f32(x, w, "frequencyPenalty", S, o.frequencyPenalty);
  f32(x, w, "repetitionPenalty", S, o.repetitionPenalty);
  i32(x, w, "seenOffsets", S + 1, o.seenOffsets);
  i32(x, w, "seenTokenIds", kAnyLength, o.seenTokenIds);
  i32(x, w, "seenCounts", o.seenTokenIds.size(), o.seenCounts);
  i32(x, w, "biasOffsets", S + 1, o.biasOffsets);
  i32(x, w, "biasTokenIds", kAnyLength, o.biasTokenIds);
  f32(x, w, "biasValues", o.biasTokenIds.size(), o.biasValues);
  i32(x, w, "numLogprobs", S, o.numLogprobs);
  i32(x, w, "numPromptLogprobs", S, o.numPromptLogprobs);
  i32(x, w, "nextPromptTokenIds", S, o.nextPromptTokenIds);
  i32(x, w, "maskRows", S, o.maskRows);
  const bool mask = given(x, "tokenMask");
  if (mask) i32(x, w, "tokenMask", kAnyLength, o.tokenMask);
  const bool slots = given(x, "penaltySlots");
  AFD_CHECK(slots == given(x, "penaltySlotSeeds"), "plan.extras: penaltySlots and penaltySlotSeeds come together (both or neither)");
  if (slots) {
    i32(x, w, "penaltySlots", S, o.penaltySlots);
    typed<uint8_t, napi_uint8_array>(x, w, "penaltySlotSeeds", S, o.penaltySlotSeeds);
  }
  StepExtras& e = o.extras;
  e.presencePenalty = o.presencePenalty.data();
  e.frequencyPenalty = o.frequencyPenalty.data();
  e.repetitionPenalty = o.repetitionPenalty.data();
  e.seenOffsets = o.seenOffsets.data();
  e.seenTokenIds = o.seenTokenIds.data();
  e.seenCounts = o.seenCounts.data();
  e.biasOffsets = o.biasOffsets.data();
  e.biasTokenIds = o.biasTokenIds.data();
  e.biasValues = o.biasValues.data();
  e.numLogprobs = o.numLogprobs.data();
  e.numPromptLogprobs = o.numPromptLogprobs.data();
  e.nextPromptTokenIds = o.nextPromptTokenIds.data();
  e.numSeen = static_cast<int>(o.seenTokenIds.size());
  e.numBias = static_cast<int>(o.biasTokenIds.size());
  e.maskRows = o.maskRows.data();
  e.penaltySlots = slots ? o.penaltySlots.data() : nullptr;
  e.penaltySlotSeeds = slots ? o.penaltySlotSeeds.data() : nullptr;
  static const int32_t kNoWords = 0;  // an empty mask is given (a length error), not deferred
  e.tokenMask = mask ? (o.tokenMask.empty() ? &kNoWords : o.tokenMask.data()) : nullptr;
  e.tokenMaskLength = mask ? static_cast<int64_t>(o.tokenMask.size()) : 0;
  o.plan.extras = &o.extras;
}

template <typename T, typename Js>
Js copied(Napi::Env env, const std::vector<T>& v) {
  Js a = Js::New(env, v.size());
  std::copy(v.begin(), v.end(), a.Data());
  return a;
}

Napi::Object logprobsToJs(Napi::Env env, const TokenLogprobs& l) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("rowOffsets", copied<int32_t, Napi::Int32Array>(env, l.rowOffsets));
  o.Set("width", l.width);
  o.Set("tokenIds", copied<int32_t, Napi::Int32Array>(env, l.tokenIds));
  o.Set("logprobs", copied<float, Napi::Float32Array>(env, l.logprobs));
  o.Set("ranks", copied<int32_t, Napi::Int32Array>(env, l.ranks));
  return o;
}

}  // namespace

void toStepPlan(const Napi::Object& p, OwnedStepPlan& o) {
  StepPlan& s = o.plan;
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  const char* w = "plan";
  s.numSeqs = planInt(p, "numSeqs", 1, kMaxInt);
  const size_t S = static_cast<size_t>(s.numSeqs);
  i32(p, w, "tokenOffsets", S + 1, o.tokenOffsets);
  s.numTokens = o.tokenOffsets[S];
  AFD_CHECK(s.numTokens >= 0, "plan.tokenOffsets must end at the token count");
  i32(p, w, "tokenIds", static_cast<size_t>(s.numTokens), o.tokenIds);
  i32(p, w, "positions", static_cast<size_t>(s.numTokens), o.positions);
  i32(p, w, "contextLens", S, o.contextLens);
  s.maxBlocksPerSeq = planInt(p, "maxBlocksPerSeq", 1, kMaxInt);
  i32(p, w, "blockTables", S * static_cast<size_t>(s.maxBlocksPerSeq), o.blockTables);
  typed<uint8_t, napi_uint8_array>(p, w, "sampleMask", S, o.sampleMask);
  f32(p, w, "temperature", S, o.temperature);
  i32(p, w, "topK", S, o.topK);
  f32(p, w, "topP", S, o.topP);
  typed<uint32_t, napi_uint32_array>(p, w, "seeds", S, o.seeds);
  f32(p, w, "minP", S, o.minP);
  s.stageSplit = planInt(p, "stageSplit", -kMaxInt, kMaxInt);  // its range is validateStepPlan's
  s.returnLogits = boolean(p, w, "returnLogits");
  s.tokenIds = o.tokenIds.data();
  s.positions = o.positions.data();
  s.tokenOffsets = o.tokenOffsets.data();
  s.contextLens = o.contextLens.data();
  s.blockTables = o.blockTables.data();
  s.sampleMask = o.sampleMask.data();
  s.temperature = o.temperature.data();
  s.topK = o.topK.data();
  s.topP = o.topP.data();
  s.seeds = o.seeds.data();
  s.minP = o.minP.data();
  s.stateSlots = nullptr;
  if (given(p, "stateSlots")) {
    i32(p, w, "stateSlots", S, o.stateSlots);
    s.stateSlots = o.stateSlots.data();
  }
  s.extras = nullptr;
  if (given(p, "extras")) {
    AFD_CHECK(p.Get("extras").IsObject(), "plan.extras must be an object (StepExtras) when present");
    toStepExtras(p.Get("extras").As<Napi::Object>(), S, o);
  }
}

Napi::Object stepResultToJs(Napi::Env env, const StepResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("tokenIds", copied<int32_t, Napi::Int32Array>(env, r.tokenIds));
  if (!r.logits.empty()) o.Set("logits", copied<float, Napi::Float32Array>(env, r.logits));
  o.Set("stepTimeMs", r.stepTimeMs);
  if (r.logprobs) o.Set("logprobs", logprobsToJs(env, *r.logprobs));
  if (r.promptLogprobs) o.Set("promptLogprobs", logprobsToJs(env, *r.promptLogprobs));
  return o;
}

}  // namespace afd::binding
