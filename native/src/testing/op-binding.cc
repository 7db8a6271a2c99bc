#include "testing/op-binding.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/debug-env.h"
#include "runtime/registry.h"

namespace afd::binding {
namespace {

// Inputs uploaded to the backend, and outputs to read back.
class OpContext {
 public:
  OpContext(Backend& be, const Napi::Object& inputs, const Napi::Object& params) : be_(be), params_(params) {
    Napi::Array names = inputs.GetPropertyNames();
    for (uint32_t i = 0; i < names.Length(); ++i) {
      const std::string name = names.Get(i).As<Napi::String>().Utf8Value();
      Napi::Object spec = inputs.Get(name).As<Napi::Object>();
      const std::string dt = spec.Get("dtype").As<Napi::String>().Utf8Value();
      const DType dtype = dt == "i32" ? DType::I32 : parseDType(dt);
      Napi::Array shape = spec.Get("shape").As<Napi::Array>();
      AFD_CHECK(shape.Length() >= 1 && shape.Length() <= kMaxDims, "runOp: input " << name << " must have rank 1.." << kMaxDims);
      Tensor t;
      t.dtype = dtype;
      t.ndim = static_cast<int>(shape.Length());
      for (int d = 0; d < t.ndim; ++d) t.dims[d] = shape.Get(d).As<Napi::Number>().Int64Value();
      AFD_CHECK(spec.Get("data").IsTypedArray(), "runOp: input " << name << ".data must be a typed array");
      Napi::TypedArray data = spec.Get("data").As<Napi::TypedArray>();
      AFD_CHECK(data.ByteLength() == t.bytes(), "runOp: input " << name << " has " << data.ByteLength() << " bytes, "
                                                                << dtypeName(dtype) << " " << t.shapeString() << " needs " << t.bytes());
      Buffer buf(&be_, t.bytes());
      const uint8_t* src = static_cast<const uint8_t*>(data.ArrayBuffer().Data()) + data.ByteOffset();
      be_.copyToDevice(buf.data(), src, t.bytes());
      t.data = buf.data();
      t.device = be_.device();
      inputs_[name] = t;
      buffers_.push_back(std::move(buf));
    }
  }

  Tensor& in(const std::string& name) {
    auto it = inputs_.find(name);
    AFD_CHECK(it != inputs_.end(), "runOp: input " << name << " is required");
    return it->second;
  }
  Tensor* opt(const std::string& name) {
    auto it = inputs_.find(name);
    return it == inputs_.end() ? nullptr : &it->second;
  }
  double num(const std::string& name, double fallback) const {
    return params_.Has(name) ? params_.Get(name).ToNumber().DoubleValue() : fallback;
  }
  Tensor out(const std::string& name, DType dtype, std::initializer_list<int64_t> shape) {
    Tensor t(nullptr, dtype, shape, be_.device());
    Buffer buf(&be_, t.bytes());
    be_.fillZero(buf.data(), t.bytes());
    t.data = buf.data();
    buffers_.push_back(std::move(buf));
    outputs_[name] = t;
    return t;
  }
  // Marks an (in/out) input as an output too.
  void alsoOutput(const std::string& name) { outputs_[name] = in(name); }

  Napi::Object results(Napi::Env env) {
    be_.synchronize();
    Napi::Object o = Napi::Object::New(env);
    for (auto& [name, t] : outputs_) {
      if (t.dtype == DType::I32) {
        auto a = Napi::Int32Array::New(env, t.numel());
        be_.copyToHost(a.Data(), t.data, t.bytes());
        o.Set(name, a);
      } else {
        AFD_CHECK(t.dtype == DType::F32, "runOp: output " << name << " is " << dtypeName(t.dtype) << "; only f32 and i32 outputs are read back");
        auto a = Napi::Float32Array::New(env, t.numel());
        be_.copyToHost(a.Data(), t.data, t.bytes());
        o.Set(name, a);
      }
    }
    return o;
  }

 private:
  Backend& be_;
  Napi::Object params_;
  std::map<std::string, Tensor> inputs_;
  std::map<std::string, Tensor> outputs_;
  std::vector<Buffer> buffers_;
};

// The linear-attention batch from inputs seqStarts, stateSlots, hasState (i32) and the
// maxSeqLen param (default: all T tokens).
LinearAttentionBatch linearBatch(OpContext& c, int64_t T) {
  LinearAttentionBatch batch;
  batch.seqStarts = c.in("seqStarts");
  batch.stateSlots = c.in("stateSlots");
  batch.hasState = c.in("hasState");
  batch.numSeqs = static_cast<int>(batch.stateSlots.dim(0));
  batch.maxSeqLen = static_cast<int>(c.num("maxSeqLen", static_cast<double>(T)));
  return batch;
}

void runNamedOp(Backend& be, const std::string& op, OpContext& c) {
  const float eps = static_cast<float>(c.num("eps", 1e-6));
  if (op == "embedding") {
    Tensor out = c.out("out", DType::F32, {c.in("ids").dim(0), c.in("table").dim(1)});
    be.embedding(c.in("ids"), c.in("table"), out);
  } else if (op == "rmsNorm") {
    Tensor out = c.out("out", DType::F32, {c.in("x").dim(0), c.in("x").dim(1)});
    be.rmsNorm(c.in("x"), c.in("weight"), eps, out);
  } else if (op == "addRmsNorm") {
    Tensor out = c.out("out", DType::F32, {c.in("residual").dim(0), c.in("residual").dim(1)});
    be.addRmsNorm(c.in("delta"), c.in("residual"), c.in("weight"), eps, out);
    c.alsoOutput("residual");
  } else if (op == "qkNormRope") {
    RopeParams rope{c.in("invFreq"), static_cast<float>(c.num("attentionScale", 1))};
    be.qkNormRope(c.in("q"), c.in("k"), c.in("positions"), c.opt("qNorm"), c.opt("kNorm"), eps, rope);
    c.alsoOutput("q");
    c.alsoOutput("k");
  } else if (op == "pagedAttention") {
    // Writes k/v at slotMapping, then attends (the order the model uses).
    Tensor& q = c.in("q");
    be.writeKvCache(c.in("k"), c.in("v"), c.in("slotMapping"), c.in("kCache"), c.in("vCache"));
    AttentionBatch batch;
    batch.tokenSeq = c.in("tokenSeq");
    batch.positions = c.in("positions");
    batch.blockTables = c.in("blockTables");
    batch.numSeqs = static_cast<int>(batch.blockTables.dim(0));
    batch.maxBlocksPerSeq = static_cast<int>(batch.blockTables.dim(1));
    batch.maxQueryLen = static_cast<int>(c.num("maxQueryLen", static_cast<double>(q.dim(0))));
    batch.maxContextLen = static_cast<int>(c.num("maxContextLen", 0));
    Tensor out = c.out("out", DType::F32, {q.dim(0), q.dim(1), q.dim(2)});
    be.pagedAttention(q, c.in("kCache"), c.in("vCache"), batch, static_cast<float>(c.num("scale", 1)), out);
  } else if (op == "causalConv1d") {
    // inPlace: 1 passes x as out (allowed) and reads the result back as x.
    Tensor& x = c.in("x");
    const bool inPlace = c.num("inPlace", 0) != 0;
    Tensor out = inPlace ? x : c.out("out", DType::F32, {x.dim(0), x.dim(1)});
    be.causalConv1d(x, c.in("weight"), c.in("convState"), linearBatch(c, x.dim(0)), out);
    c.alsoOutput("convState");
    if (inPlace) c.alsoOutput("x");
  } else if (op == "rmsNormGated") {
    Tensor& x = c.in("x");
    const bool inPlace = c.num("inPlace", 0) != 0;
    Tensor out = inPlace ? x : c.out("out", DType::F32, {x.dim(0), x.dim(1), x.dim(2)});
    be.rmsNormGated(x, c.in("z"), c.in("weight"), eps, out);
    if (inPlace) c.alsoOutput("x");
  } else if (op == "gatedDeltaRule") {
    Tensor& v = c.in("v");
    Tensor out = c.out("out", DType::F32, {v.dim(0), v.dim(1), v.dim(2)});
    be.gatedDeltaRule(c.in("q"), c.in("k"), v, c.in("g"), c.in("beta"), c.in("state"), linearBatch(c, v.dim(0)), out);
    c.alsoOutput("state");
  } else if (op == "gdnGating") {
    Tensor& a = c.in("a");
    Tensor g = c.out("g", DType::F32, {a.dim(0), a.dim(1)});
    Tensor beta = c.out("beta", DType::F32, {a.dim(0), a.dim(1)});
    be.gdnGating(a, c.in("b"), c.in("aLog"), c.in("dtBias"), g, beta);
  } else if (op == "matmul") {
    Tensor out = c.out("out", DType::F32, {c.in("x").dim(0), c.in("w").dim(0)});
    be.matmul(c.in("x"), c.in("w"), c.opt("bias"), out);
  } else if (op == "lmHead") {
    Tensor out = c.out("out", DType::F32, {c.in("x").dim(0), c.in("w").dim(0)});
    be.lmHead(c.in("x"), c.in("w"), out);
  } else if (op == "siluGatedMlp") {
    Tensor out = c.out("out", DType::F32, {c.in("x").dim(0), c.in("x").dim(1)});
    be.siluGatedMlp(c.in("x"), c.in("gate"), c.in("up"), c.in("down"), out);
  } else if (op == "routerTopK") {
    const int k = static_cast<int>(c.num("k", 1));
    const int64_t T = c.in("logits").dim(0);
    Tensor ids = c.out("expertIds", DType::I32, {T, k});
    Tensor w = c.out("expertWeights", DType::F32, {T, k});
    be.routerTopK(c.in("logits"), k, c.num("normTopk", 0) != 0, ids, w);
  } else if (op == "moeExperts") {
    // gate, up: [E, I, H]; down: [E, H, I] stacked.
    Tensor &g = c.in("gate"), &u = c.in("up"), &d = c.in("down");
    std::vector<ExpertWeights> experts(g.dim(0));
    for (int64_t e = 0; e < g.dim(0); ++e) {
      experts[e].gate = g.rows(e, e + 1).reshape({g.dim(1), g.dim(2)});
      experts[e].up = u.rows(e, e + 1).reshape({u.dim(1), u.dim(2)});
      experts[e].down = d.rows(e, e + 1).reshape({d.dim(1), d.dim(2)});
    }
    Tensor out = c.out("out", DType::F32, {c.in("x").dim(0), c.in("x").dim(1)});
    be.moeExperts(c.in("x"), c.in("expertIds"), c.in("expertWeights"), experts, out);
  } else if (op == "add") {
    Tensor& a = c.in("a");
    Tensor out = c.out("out", DType::F32, {a.numel()});
    be.add(a, c.in("b"), out);
  } else if (op == "gatherRows") {
    Tensor out = c.out("out", DType::F32, {c.in("rows").dim(0), c.in("x").dim(1)});
    be.gatherRows(c.in("x"), c.in("rows"), out);
  } else if (op == "sample") {
    // Sampling params are host arrays; they arrive as f32 / i32 inputs and are read back.
    Tensor& logits = c.in("logits");
    const int64_t S = logits.dim(0);
    auto host = [&](const char* name, size_t bytes) {
      std::vector<uint8_t> v(bytes);
      be.copyToHost(v.data(), c.in(name).data, bytes);
      return v;
    };
    auto temp = host("temperature", S * 4), topK = host("topK", S * 4), topP = host("topP", S * 4);
    auto seeds = host("seeds", S * 4), pos = host("samplePositions", S * 4);
    SamplingBatch p{reinterpret_cast<float*>(temp.data()), reinterpret_cast<int32_t*>(topK.data()),
                    reinterpret_cast<float*>(topP.data()), reinterpret_cast<uint32_t*>(seeds.data()),
                    reinterpret_cast<int32_t*>(pos.data())};
    std::vector<int32_t> tokens(S);
    be.sample(logits, p, tokens.data());
    Tensor out = c.out("tokens", DType::I32, {S});
    be.copyToDevice(out.data, tokens.data(), S * 4);
  } else {
    AFD_FAIL("runOp: unknown op \"" << op << "\" (embedding, rmsNorm, addRmsNorm, qkNormRope, pagedAttention, matmul, lmHead, "
                                       "siluGatedMlp, routerTopK, moeExperts, add, gatherRows, sample, causalConv1d, gatedDeltaRule, rmsNormGated, "
                                       "gdnGating)");
  }
}

}  // namespace

Napi::Value RunOp(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    AFD_CHECK(info.Length() >= 3 && info[0].IsObject() && info[1].IsString() && info[2].IsObject(),
              "runOp(backend: {name, threads?, deviceIndex?}, op: string, inputs: object, params?: object)");
    Napi::Object bo = info[0].As<Napi::Object>();
    BackendOptions opts;
    if (bo.Has("name")) opts.name = bo.Get("name").ToString().Utf8Value();
    if (bo.Has("threads")) opts.threads = bo.Get("threads").ToNumber().Int32Value();
    if (bo.Has("deviceIndex")) opts.deviceIndex = bo.Get("deviceIndex").ToNumber().Int32Value();
    applyDebugEnv(opts.cuda);  // the CUDA choices an engine without options gets
    std::unique_ptr<Backend> be = createBackend(opts);
    Napi::Object params = info.Length() > 3 && info[3].IsObject() ? info[3].As<Napi::Object>() : Napi::Object::New(env);
    OpContext ctx(*be, info[2].As<Napi::Object>(), params);
    runNamedOp(*be, info[1].As<Napi::String>().Utf8Value(), ctx);
    return ctx.results(env);
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

}  // namespace afd::binding
