#include "binding/js-convert.h"

#include <cmath>
#include <limits>

#include "binding/js-fields.h"
#include "comm/wire-time.h"
#include "core/debug-env.h"

namespace afd::binding {

Napi::Value field(const Napi::Object& o, const char* where, const char* name) {
  AFD_CHECK(o.Has(name), where << "." << name << " is missing");
  return o.Get(name);
}

double num(const Napi::Object& o, const char* where, const char* name) {
  Napi::Value v = field(o, where, name);
  AFD_CHECK(v.IsNumber(), where << "." << name << " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  AFD_CHECK(std::isfinite(d), where << "." << name << " must be finite");
  return d;
}

int64_t integer(const Napi::Object& o, const char* where, const char* name) {
  const double d = num(o, where, name);
  AFD_CHECK(d == std::floor(d), where << "." << name << " must be an integer (got " << d << ")");
  AFD_CHECK(std::fabs(d) <= 9007199254740992.0, where << "." << name << " must be a safe integer (got " << d << ")");
  return static_cast<int64_t>(d);
}

bool boolean(const Napi::Object& o, const char* where, const char* name) {
  Napi::Value v = field(o, where, name);
  AFD_CHECK(v.IsBoolean(), where << "." << name << " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

std::string str(const Napi::Object& o, const char* where, const char* name) {
  Napi::Value v = field(o, where, name);
  AFD_CHECK(v.IsString(), where << "." << name << " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

Napi::Array arr(const Napi::Object& o, const char* where, const char* name) {
  Napi::Value v = field(o, where, name);
  AFD_CHECK(v.IsArray(), where << "." << name << " must be an array");
  return v.As<Napi::Array>();
}

bool given(const Napi::Object& o, const char* name) {
  if (!o.Has(name)) return false;
  Napi::Value v = o.Get(name);
  return !v.IsUndefined() && !v.IsNull();
}

namespace {

// spec.config.mla / gdn / routing: the hyper-parameters of mla and gdn layers and of grouped
// routing (null when no layer uses them).
void readLayerParams(const Napi::Object& c, ModelConfig& m) {
  if (given(c, "mla")) {
    AFD_CHECK(c.Get("mla").IsObject(), "spec.config.mla must be an object or null");
    const Napi::Object o = c.Get("mla").As<Napi::Object>();
    const char* w = "spec.config.mla";
    m.mla.qLoraRank = integer(o, w, "qLoraRank");
    m.mla.kvLoraRank = integer(o, w, "kvLoraRank");
    m.mla.qkNopeHeadDim = integer(o, w, "qkNopeHeadDim");
    m.mla.qkRopeHeadDim = integer(o, w, "qkRopeHeadDim");
    m.mla.vHeadDim = integer(o, w, "vHeadDim");
    m.mla.ropeInterleave = boolean(o, w, "ropeInterleave");
    m.mla.softmaxScale = num(o, w, "softmaxScale");
  }
  if (given(c, "gdn")) {
    AFD_CHECK(c.Get("gdn").IsObject(), "spec.config.gdn must be an object or null");
    const Napi::Object o = c.Get("gdn").As<Napi::Object>();
    const char* w = "spec.config.gdn";
    m.gdn.numKeyHeads = static_cast<int>(integer(o, w, "numKeyHeads"));
    m.gdn.numValueHeads = static_cast<int>(integer(o, w, "numValueHeads"));
    m.gdn.keyHeadDim = integer(o, w, "keyHeadDim");
    m.gdn.valueHeadDim = integer(o, w, "valueHeadDim");
    m.gdn.convKernel = static_cast<int>(integer(o, w, "convKernel"));
    const std::string layout = str(o, w, "projLayout");
    AFD_CHECK(layout == "grouped" || layout == "split", "spec.config.gdn.projLayout must be \"grouped\" or \"split\", got \"" << layout << "\"");
    m.gdn.grouped = layout == "grouped";
  }
  if (given(c, "gatedSharedExpert")) {
    AFD_CHECK(c.Get("gatedSharedExpert").IsObject(), "spec.config.gatedSharedExpert must be an object or null");
    const Napi::Object o = c.Get("gatedSharedExpert").As<Napi::Object>();
    m.gatedSharedIntermediateSize = integer(o, "spec.config.gatedSharedExpert", "intermediateSize");
  }
  if (given(c, "routing")) {
    AFD_CHECK(c.Get("routing").IsObject(), "spec.config.routing must be an object or null");
    const Napi::Object o = c.Get("routing").As<Napi::Object>();
    const char* w = "spec.config.routing";
    m.routing.grouped = true;
    m.routing.scoring = parseRouterScoring(str(o, w, "scoringFunc"));
    m.routing.method = parseRouterTopkMethod(str(o, w, "topkMethod"));
    m.routing.numGroups = static_cast<int>(integer(o, w, "nGroup"));
    m.routing.topkGroups = static_cast<int>(integer(o, w, "topkGroup"));
    m.routing.routedScalingFactor = num(o, w, "routedScalingFactor");
    m.routing.scoreCorrectionBias = boolean(o, w, "scoreCorrectionBias");
    m.routing.numSharedExperts = static_cast<int>(integer(o, w, "numSharedExperts"));
    m.routing.sharedIntermediateSize = integer(o, w, "sharedIntermediateSize");
  }
}

}  // namespace

ModelLoadSpec toModelLoadSpec(const Napi::Object& spec) {
  ModelLoadSpec s;
  Napi::Value cv = field(spec, "spec", "config");
  AFD_CHECK(cv.IsObject(), "spec.config must be an object");
  Napi::Object c = cv.As<Napi::Object>();
  const char* w = "spec.config";
  ModelConfig& m = s.config;
  m.arch = str(c, w, "arch");
  m.vocabSize = integer(c, w, "vocabSize");
  m.hiddenSize = integer(c, w, "hiddenSize");
  m.numLayers = static_cast<int>(integer(c, w, "numLayers"));
  m.numHeads = static_cast<int>(integer(c, w, "numHeads"));
  m.numKvHeads = static_cast<int>(integer(c, w, "numKvHeads"));
  m.headDim = integer(c, w, "headDim");
  m.intermediateSize = integer(c, w, "intermediateSize");
  m.rmsNormEps = num(c, w, "rmsNormEps");
  m.ropeTheta = num(c, w, "ropeTheta");
  Napi::Value rv = field(c, w, "ropeScaling");
  AFD_CHECK(rv.IsObject(), "spec.config.ropeScaling must be an object");
  Napi::Object r = rv.As<Napi::Object>();
  const char* rw = "spec.config.ropeScaling";
  m.ropeScaling.type = str(r, rw, "type");
  m.ropeScaling.factor = num(r, rw, "factor");
  m.ropeScaling.lowFreqFactor = num(r, rw, "lowFreqFactor");
  m.ropeScaling.highFreqFactor = num(r, rw, "highFreqFactor");
  m.ropeScaling.originalMaxPositionEmbeddings = integer(r, rw, "originalMaxPositionEmbeddings");
  m.ropeScaling.betaFast = num(r, rw, "betaFast");
  m.ropeScaling.betaSlow = num(r, rw, "betaSlow");
  m.ropeScaling.attentionFactor = num(r, rw, "attentionFactor");
  m.maxPositionEmbeddings = integer(c, w, "maxPositionEmbeddings");
  m.tieWordEmbeddings = boolean(c, w, "tieWordEmbeddings");
  m.rotaryDim = integer(c, w, "rotaryDim");
  m.normUnitOffset = boolean(c, w, "normUnitOffset");
  m.numExperts = static_cast<int>(integer(c, w, "numExperts"));
  m.numExpertsPerTok = static_cast<int>(integer(c, w, "numExpertsPerTok"));
  m.moeIntermediateSize = integer(c, w, "moeIntermediateSize");
  m.normTopkProb = boolean(c, w, "normTopkProb");
  Napi::Array layers = arr(c, w, "layers");
  for (uint32_t i = 0; i < layers.Length(); ++i) {
    AFD_CHECK(layers.Get(i).IsObject(), "spec.config.layers[" << i << "] must be an object { attention, ffn }");
    const Napi::Object l = layers.Get(i).As<Napi::Object>();
    m.layers.push_back(LayerKinds{parseAttentionKind(str(l, "spec.config.layers[]", "attention")),
                                  parseFfnKind(str(l, "spec.config.layers[]", "ffn"))});
  }
  Napi::Array eos = arr(c, w, "eosTokenIds");
  for (uint32_t i = 0; i < eos.Length(); ++i) m.eosTokenIds.push_back(eos.Get(i).ToNumber().Int32Value());
  Napi::Value bos = field(c, w, "bosTokenId");
  m.bosTokenId = bos.IsNumber() ? bos.As<Napi::Number>().Int32Value() : -1;
  readLayerParams(c, m);

  s.role = parseModelRole(str(spec, "spec", "role"));
  s.computeGateOnAttention = boolean(spec, "spec", "computeGateOnAttention");
  if (given(spec, "expertRange")) {
    Napi::Value rv2 = spec.Get("expertRange");
    AFD_CHECK(rv2.IsObject(), "spec.expertRange must be an object { start, end }");
    Napi::Object er = rv2.As<Napi::Object>();
    s.expertRange = ExpertRange{static_cast<int>(integer(er, "spec.expertRange", "start")),
                                static_cast<int>(integer(er, "spec.expertRange", "end"))};
  }
  Napi::Array files = arr(spec, "spec", "files");
  for (uint32_t i = 0; i < files.Length(); ++i) {
    AFD_CHECK(files.Get(i).IsString(), "spec.files[" << i << "] must be a string path");
    s.files.push_back(files.Get(i).As<Napi::String>().Utf8Value());
  }
  Napi::Array tensors = arr(spec, "spec", "tensors");
  for (uint32_t i = 0; i < tensors.Length(); ++i) {
    AFD_CHECK(tensors.Get(i).IsObject(), "spec.tensors[" << i << "] must be an object");
    Napi::Object t = tensors.Get(i).As<Napi::Object>();
    const char* tw = "spec.tensors[]";
    TensorRef ref;
    ref.name = str(t, tw, "name");
    ref.slot.slot = str(t, tw, "slot");
    if (given(t, "layer")) ref.slot.layer = static_cast<int>(integer(t, tw, "layer"));
    if (given(t, "expert")) ref.slot.expert = static_cast<int>(integer(t, tw, "expert"));
    AFD_CHECK(ref.slot.layer >= 0 || !given(t, "layer"), "tensor " << ref.name << " has a negative layer");
    AFD_CHECK(ref.slot.expert >= 0 || !given(t, "expert"), "tensor " << ref.name << " has a negative expert");
    ref.file = static_cast<int>(integer(t, tw, "file"));
    ref.dtype = parseDType(str(t, tw, "dtype"));
    Napi::Array shape = arr(t, tw, "shape");
    for (uint32_t j = 0; j < shape.Length(); ++j) ref.shape.push_back(shape.Get(j).ToNumber().Int64Value());
    const int64_t off = integer(t, tw, "offset"), len = integer(t, tw, "byteLength");
    AFD_CHECK(off >= 0 && len >= 0, "tensor " << ref.name << " has a negative offset or byteLength");
    ref.offset = static_cast<uint64_t>(off);
    ref.byteLength = static_cast<uint64_t>(len);
    if (ref.file == kDummyFile) {
      Napi::Value dv = field(t, tw, "dummy");
      AFD_CHECK(dv.IsObject(), "tensor " << ref.name << " is a dummy tensor (file -1) but has no dummy {scale, offset}");
      Napi::Object d = dv.As<Napi::Object>();
      ref.dummyScale = static_cast<float>(num(d, "spec.tensors[].dummy", "scale"));
      ref.dummyOffset = static_cast<float>(num(d, "spec.tensors[].dummy", "offset"));
    }
    s.tensors.push_back(std::move(ref));
  }
  if (given(spec, "dummySeed")) {
    const int64_t seed = integer(spec, "spec", "dummySeed");
    AFD_CHECK(seed >= 0, "spec.dummySeed must be a non-negative integer");
    s.dummySeed = static_cast<uint64_t>(seed);
  }
  return s;
}

namespace {

// An integer option that must fit an int (its own range is checked where it is used).
int intOption(const Napi::Object& o, const char* name) {
  const int64_t n = integer(o, "options", name);
  AFD_CHECK(n >= std::numeric_limits<int32_t>::min() && n <= std::numeric_limits<int32_t>::max(),
            "options." << name << " is " << n << "; expected a 32-bit integer");
  return static_cast<int>(n);
}

// The CUDA backend's kernel choices (NativeEngineOptions; the CPU backend ignores them).
void readCudaOptions(const Napi::Object& v, CudaOptions& c) {
  const char* w = "options";
  if (given(v, "attentionKernel")) c.attentionKernel = parseAttentionKernel(str(v, w, "attentionKernel"), "options.attentionKernel");
  if (given(v, "attentionBlocksPerSm")) c.attentionBlocksPerSm = intOption(v, "attentionBlocksPerSm");
  if (given(v, "attentionPrecision")) c.attentionPrecision = parseAttentionPrecision(str(v, w, "attentionPrecision"), "options.attentionPrecision");
  if (given(v, "expertGemm")) c.expertGemm = parseExpertGemmChoice(str(v, w, "expertGemm"), "options.expertGemm");
  if (given(v, "expertGemmMinTokens")) c.expertGemmMinTokens = intOption(v, "expertGemmMinTokens");
}

void readEngineOptions(const Napi::Value& value, EngineOptions& o) {
  AFD_CHECK(value.IsObject(), "engine options must be an object");
  Napi::Object v = value.As<Napi::Object>();
  const char* w = "options";
  if (given(v, "backend")) o.backend.name = str(v, w, "backend");
  if (given(v, "threads")) o.backend.threads = static_cast<int>(integer(v, w, "threads"));
  if (given(v, "deviceIndex")) o.backend.deviceIndex = static_cast<int>(integer(v, w, "deviceIndex"));
  readCudaOptions(v, o.backend.cuda);
  if (given(v, "kvBlockSize")) o.kvBlockSize = static_cast<int>(integer(v, w, "kvBlockSize"));
  if (given(v, "numKvBlocks")) o.numKvBlocks = static_cast<int>(integer(v, w, "numKvBlocks"));
  if (given(v, "numStateSlots")) o.numStateSlots = static_cast<int>(integer(v, w, "numStateSlots"));
  if (given(v, "kvCacheBytes")) o.kvCacheBytes = static_cast<uint64_t>(integer(v, w, "kvCacheBytes"));
  if (given(v, "kvDtype")) o.kvDtype = parseDType(str(v, w, "kvDtype"));
  if (given(v, "kvShareable")) o.kvShareable = boolean(v, w, "kvShareable");
  if (given(v, "kvShareDir")) o.kvShareDir = str(v, w, "kvShareDir");
  if (given(v, "kvMemoryFraction")) {
    Napi::Value f = v.Get("kvMemoryFraction");
    o.kvMemoryFraction = f.IsNumber() ? f.As<Napi::Number>().DoubleValue() : -1;
    AFD_CHECK(o.kvMemoryFraction > 0 && o.kvMemoryFraction <= 0.99,
              "options.kvMemoryFraction must be a number in (0, 0.99] (the share of free device memory the KV cache may take)");
  }
  if (given(v, "graphPolicy")) o.graphs.policy = parseGraphPolicy(str(v, w, "graphPolicy"));
  if (given(v, "graphBatchBuckets")) {
    Napi::Array b = arr(v, w, "graphBatchBuckets");
    o.graphs.batchBuckets.clear();
    for (uint32_t i = 0; i < b.Length(); ++i) {
      Napi::Value e = b.Get(i);
      const double n = e.IsNumber() ? e.As<Napi::Number>().DoubleValue() : -1;
      AFD_CHECK(n >= 1 && n <= 65536 && std::floor(n) == n, "options.graphBatchBuckets[" << i << "] must be an integer in [1, 65536]");
      o.graphs.batchBuckets.push_back(static_cast<int>(n));
    }
    validateGraphBuckets(o.graphs.batchBuckets);
  }
  AFD_CHECK(o.backend.threads >= 0, "options.threads must be >= 0 (0 = all cores), got " << o.backend.threads);
  AFD_CHECK(o.kvBlockSize >= 1 && o.kvBlockSize <= 1024, "options.kvBlockSize must be in [1, 1024], got " << o.kvBlockSize);
  AFD_CHECK(o.numKvBlocks >= 0, "options.numKvBlocks must be >= 0 (0 = size from kvCacheBytes), got " << o.numKvBlocks);
  AFD_CHECK(o.kvCacheBytes > 0, "options.kvCacheBytes must be positive");
  AFD_CHECK(o.numStateSlots >= 1 && o.numStateSlots <= 65536,
            "options.numStateSlots must be in [1, 65536] (recurrent-state slots of gdn models), got " << o.numStateSlots);
}

}  // namespace

EngineOptions toEngineOptions(const Napi::Value& value) {
  EngineOptions o;
  if (!value.IsUndefined() && !value.IsNull()) readEngineOptions(value, o);
  // The debugging overrides of the environment (core/debug-env.h) win over the options.
  applyDebugEnv(o.backend.cuda);
  if (debugEnv().graphsOff) o.graphs.policy = GraphPolicy::Off;
  validateCudaOptions(o.backend.cuda);
  return o;
}

Napi::Object engineInfoToJs(Napi::Env env, const EngineInfo& i) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("role", i.role);
  o.Set("arch", i.arch);
  o.Set("backend", i.backend);
  o.Set("threads", i.threads);
  o.Set("numLayers", i.numLayers);
  o.Set("vocabSize", static_cast<double>(i.vocabSize));
  o.Set("hiddenSize", static_cast<double>(i.hiddenSize));
  o.Set("kvBlockSize", i.kvBlockSize);
  o.Set("numKvBlocks", i.numKvBlocks);
  o.Set("kvBytesPerBlock", static_cast<double>(i.kvBytesPerBlock));
  o.Set("kvDtype", i.kvDtype);
  o.Set("kvNumLayers", i.kvNumLayers);
  o.Set("kvTensorsPerLayer", i.kvTensorsPerLayer);
  o.Set("kvRowBytes", static_cast<double>(i.kvRowBytes));
  o.Set("numStateSlots", i.numStateSlots);
  o.Set("stateBytesPerSlot", static_cast<double>(i.stateBytesPerSlot));
  o.Set("residentWeightBytes", static_cast<double>(i.residentWeightBytes));
  o.Set("numWeightTensors", static_cast<double>(i.numWeightTensors));
  return o;
}

Napi::Object engineStatsToJs(Napi::Env env, EngineStats& s) {
  Napi::Object o = Napi::Object::New(env);
  const double steps = static_cast<double>(s.steps.load());
  o.Set("steps", steps);
  o.Set("lastStepMs", static_cast<double>(s.lastStepUs.load()) / 1000.0);
  o.Set("avgStepMs", steps > 0 ? static_cast<double>(s.totalStepUs.load()) / 1000.0 / steps : 0.0);
  o.Set("prefillTokens", static_cast<double>(s.prefillTokens.load()));
  o.Set("decodeTokens", static_cast<double>(s.decodeTokens.load()));
  o.Set("sampledTokens", static_cast<double>(s.sampledTokens.load()));
  o.Set("ffnComputeMs", static_cast<double>(s.ffnComputeUs.load()) / 1000.0);
  o.Set("ffnWaitMs", static_cast<double>(s.ffnWaitUs.load()) / 1000.0);
  o.Set("graphHits", static_cast<double>(s.graphHits.load()));
  o.Set("graphMisses", static_cast<double>(s.graphMisses.load()));
  o.Set("graphCaptures", static_cast<double>(s.graphCaptures.load()));
  o.Set("graphNodes", static_cast<double>(s.graphNodes.load()));
  o.Set("stepsServed", static_cast<double>(s.stepsServed.load()));
  o.Set("ffnLoopState", ffnLoopStateName(static_cast<FfnLoopState>(s.ffnLoopState.load())));
  o.Set("ffnLoopLayer", s.ffnLoopLayer.load());
  o.Set("ffnLoopStage", s.ffnLoopStage.load());
  const uint64_t since = s.ffnLoopSinceUs.load(), now = steadyNowUs();
  o.Set("ffnLoopStateMs", since > 0 && now > since ? static_cast<double>(now - since) / 1000.0 : 0.0);
  o.Set("kvBlocksUsed", static_cast<double>(s.kvBlocksUsed.load()));
  o.Set("kvBlocksTotal", static_cast<double>(s.kvBlocksTotal));
  o.Set("numLayers", s.numLayers);
  o.Set("numStages", s.numStages);
  o.Set("wireBasisA2f", comm::wireBasisName(static_cast<comm::WireBasis>(s.wireBasisAtoF.load())));
  o.Set("wireBasisF2a", comm::wireBasisName(static_cast<comm::WireBasis>(s.wireBasisFtoA.load())));
  // Dense [numLayers][numStages] arrays, the RankStats layout.
  const char* names[4] = {"a2fBytes", "f2aBytes", "a2fWireUs", "f2aWireUs"};
  for (int which = 0; which < 4; ++which) {
    Napi::Array rows = Napi::Array::New(env, s.numLayers);
    for (int L = 0; L < s.numLayers; ++L) {
      Napi::Array row = Napi::Array::New(env, s.numStages);
      for (int st = 0; st < s.numStages; ++st) {
        LayerStageCounters& c = s.at(L, st);
        const std::atomic<uint64_t>* f[4] = {&c.bytesAtoF, &c.bytesFtoA, &c.wireTimeUsAtoF, &c.wireTimeUsFtoA};
        row.Set(static_cast<uint32_t>(st), static_cast<double>(f[which]->load()));
      }
      rows.Set(static_cast<uint32_t>(L), row);
    }
    o.Set(names[which], rows);
  }
  return o;
}

}  // namespace afd::binding
