#include "binding/engine-binding.h"

#include <functional>

#include "binding/js-convert.h"
#include "binding/promise-worker.h"
#include "binding/step-convert.h"
#include "model/local-ffn-executor.h"

namespace afd::binding {
namespace {

// The attention engine's FFN half runs on another engine in this process (tests, and
// `afd-bench profile`); the peer's mutex serialises it with the peer's own calls. The peer's
// ffnComputeUs is the FFN half's device time: the attention engine's queued work is waited
// for before the clock starts and the peer's after the FFN is queued (on CUDA both run
// asynchronously, so a host clock around collect alone would time only the launches; on the
// CPU synchronize is free). Only the profiler and tests attach engines, so serving pays none of it.
class PeerFfnExecutor : public FfnExecutor {
 public:
  PeerFfnExecutor(std::shared_ptr<Engine> peer, Backend& attention)
      : peer_(std::move(peer)), attention_(attention), local_(*peer_->ffnModel()) {}
  void beginStep(const FfnStepInfo& info) override { local_.beginStep(info); }
  void submit(int layer, int stage, const Tensor& hidden, const Tensor* logits) override {
    local_.submit(layer, stage, hidden, logits);
  }
  void collect(int layer, int stage, Tensor& out) override {
    std::lock_guard<std::mutex> lock(peer_->mutex());
    attention_.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    local_.collect(layer, stage, out);
    peer_->backend().synchronize();
    peer_->stats().ffnComputeUs +=
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  }
  void endStep() override { peer_->stats().stepsServed += 1; }

 private:
  std::shared_ptr<Engine> peer_;
  Backend& attention_;  // the attaching engine's (the wrap that owns this executor owns it too)
  LocalFfnExecutor local_;
};

}  // namespace

Napi::Function EngineWrap::Define(Napi::Env env) {
  return DefineClass(env, "Engine",
                     {InstanceMethod<&EngineWrap::Load>("load"), InstanceMethod<&EngineWrap::Step>("step"),
                      InstanceMethod<&EngineWrap::FfnForward>("ffnForward"),
                      InstanceMethod<&EngineWrap::AttachFfn>("attachFfn"), InstanceMethod<&EngineWrap::Info>("info"),
                      InstanceMethod<&EngineWrap::ProvideTokenMask>("provideTokenMask"),
                      InstanceMethod<&EngineWrap::ExportKvBlocks>("exportKvBlocks"),
                      InstanceMethod<&EngineWrap::ImportKvBlocks>("importKvBlocks"),
                      InstanceMethod<&EngineWrap::ExportStateSlot>("exportStateSlot"),
                      InstanceMethod<&EngineWrap::ImportStateSlot>("importStateSlot"),
                      InstanceMethod<&EngineWrap::KvShareDescriptorJs>("kvShareDescriptor"),
                      InstanceMethod<&EngineWrap::KvFence>("kvFence"), InstanceMethod<&EngineWrap::OpenKvPeer>("openKvPeer"),
                      InstanceMethod<&EngineWrap::PullKvBlocks>("pullKvBlocks"),
                      InstanceMethod<&EngineWrap::PullStateSlot>("pullStateSlot"),
                      InstanceMethod<&EngineWrap::CloseKvPeer>("closeKvPeer"),
                      InstanceMethod<&EngineWrap::Stats>("stats"), InstanceMethod<&EngineWrap::ProfilerRange>("profilerRange"),
                      InstanceMethod<&EngineWrap::Close>("close")});
}

// Tags Engine objects so that unwrapping another wrapped class is refused, not a crash.
static const napi_type_tag kEngineTag = {0x5afd0e2e1a8b4c3dULL, 0x9f1e2d3c4b5a6978ULL};

EngineWrap::EngineWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineWrap>(info) {
  napi_type_tag_object(info.Env(), info.This(), &kEngineTag);
}

EngineWrap* EngineWrap::unwrap(const Napi::Value& value) {
  Napi::Env env = value.Env();
  bool tagged = false;
  EngineWrap* wrap = nullptr;
  if (!value.IsObject() || napi_check_object_type_tag(env, value, &kEngineTag, &tagged) != napi_ok || !tagged) return nullptr;
  if (napi_unwrap(env, value, reinterpret_cast<void**>(&wrap)) != napi_ok) return nullptr;
  return wrap;
}

std::shared_ptr<Engine> EngineWrap::engineOf(const Napi::Value& value, const char* what) {
  Napi::Env env = value.Env();
  EngineWrap* wrap = unwrap(value);
  if (wrap == nullptr) {
    throw Napi::Error::New(env, std::string(what) + ": the first argument must be a loaded Engine");
  }
  if (!wrap->engine_) throw Napi::Error::New(env, std::string(what) + ": the Engine has no model loaded (call load() first)");
  return wrap->engine_;
}

std::shared_ptr<Engine> EngineWrap::requireEngine(const char* what) const {
  AFD_CHECK(engine_ != nullptr, "Engine." << what << "(): no model is loaded (call load() first, or the engine was closed)");
  return engine_;
}

Napi::Value EngineWrap::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (engine_ || loading_) return rejected(env, "Engine.load(): this engine already holds a model; create a new Engine");
  if (info.Length() < 1 || !info[0].IsObject()) return rejected(env, "Engine.load(spec, options): spec must be a ModelLoadSpec object");
  auto spec = std::make_shared<ModelLoadSpec>();
  EngineOptions options;
  try {
    *spec = toModelLoadSpec(info[0].As<Napi::Object>());
    options = toEngineOptions(info.Length() > 1 ? info[1] : env.Undefined());
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  auto built = std::make_shared<std::shared_ptr<Engine>>();
  loading_ = true;
  // Keeps this wrapper alive until the worker finishes.
  auto self = std::make_shared<Napi::ObjectReference>(Napi::Persistent(info.This().As<Napi::Object>()));
  auto* worker = new PromiseWorker(
      env, [spec, options, built] { *built = std::make_shared<Engine>(std::move(*spec), options); },
      [this, built, self](Napi::Env e) -> Napi::Value {
        loading_ = false;
        engine_ = *built;
        self->Reset();
        return engineInfoToJs(e, engine_->info());
      },
      [this, self] {
        loading_ = false;
        self->Reset();
      });
  worker->Queue();
  return worker->promise();
}

Napi::Value EngineWrap::Step(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  auto plan = std::make_shared<OwnedStepPlan>();
  try {
    engine = requireEngine("step");
    AFD_CHECK(info.Length() >= 1 && info[0].IsObject(), "Engine.step(plan): plan must be a StepPlan object");
    toStepPlan(info[0].As<Napi::Object>(), *plan);
    // A deferred mask pairs with this step now, in submission order (provideTokenMask may
    // come before the worker runs).
    plan->plan.tokenMaskTicket = engine->reserveTokenMask(plan->plan);
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  auto result = std::make_shared<StepResult>();
  std::shared_ptr<FfnExecutor> exec = ffnExecutor_;  // outlives a close() during the step
  auto* worker = new PromiseWorker(
      env, [engine, plan, result, exec] { *result = engine->step(plan->plan); },
      [result](Napi::Env e) -> Napi::Value { return stepResultToJs(e, *result); });
  worker->Queue();
  return worker->promise();
}

Napi::Value EngineWrap::FfnForward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  auto hidden = std::make_shared<std::vector<float>>();
  auto logits = std::make_shared<std::vector<float>>();
  int layer = 0;
  int64_t numTokens = 0;
  try {
    engine = requireEngine("ffnForward");
    AFD_CHECK(info.Length() >= 3 && info[0].IsNumber() && info[1].IsTypedArray() && info[2].IsNumber(),
              "Engine.ffnForward(layer, hidden: Float32Array, numTokens[, routerLogits: Float32Array])");
    layer = info[0].As<Napi::Number>().Int32Value();
    numTokens = info[2].As<Napi::Number>().Int64Value();
    const int64_t H = engine->config().hiddenSize, E = engine->config().numExperts;
    auto h = info[1].As<Napi::TypedArray>();
    AFD_CHECK(h.TypedArrayType() == napi_float32_array && static_cast<int64_t>(h.ElementLength()) == numTokens * H,
              "ffnForward: hidden must be a Float32Array of numTokens x " << H << " = " << numTokens * H << " elements");
    auto hf = h.As<Napi::Float32Array>();
    hidden->assign(hf.Data(), hf.Data() + hf.ElementLength());
    if (info.Length() > 3 && !info[3].IsUndefined() && !info[3].IsNull()) {
      AFD_CHECK(info[3].IsTypedArray() && info[3].As<Napi::TypedArray>().TypedArrayType() == napi_float32_array &&
                    static_cast<int64_t>(info[3].As<Napi::TypedArray>().ElementLength()) == numTokens * E,
                "ffnForward: routerLogits must be a Float32Array of numTokens x " << E << " elements");
      auto lf = info[3].As<Napi::Float32Array>();
      logits->assign(lf.Data(), lf.Data() + lf.ElementLength());
    }
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  auto out = std::make_shared<std::vector<float>>(hidden->size());
  auto* worker = new PromiseWorker(
      env,
      [engine, layer, numTokens, hidden, logits, out] {
        const float* lg = logits->empty() ? nullptr : logits->data();
        if (engine->activationDtype() == DType::F32) {
          engine->ffnForward(layer, hidden->data(), numTokens, lg, out->data());
          return;
        }
        // bf16 activations (CUDA): the JS view stays f32; rows are rounded on the way in.
        std::vector<uint16_t> in(hidden->size()), res(hidden->size());
        for (size_t i = 0; i < in.size(); ++i) in[i] = f32ToBf16((*hidden)[i]);
        engine->ffnForward(layer, in.data(), numTokens, lg, res.data());
        for (size_t i = 0; i < res.size(); ++i) (*out)[i] = bf16ToF32(res[i]);
      },
      [out](Napi::Env e) -> Napi::Value {
        auto a = Napi::Float32Array::New(e, out->size());
        std::copy(out->begin(), out->end(), a.Data());
        return a;
      });
  worker->Queue();
  return worker->promise();
}

Napi::Value EngineWrap::AttachFfn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    std::shared_ptr<Engine> engine = requireEngine("attachFfn");
    AFD_CHECK(info.Length() >= 1 && info[0].IsObject(), "Engine.attachFfn(ffnEngine): pass a loaded ffn-role Engine");
    Napi::Object peerObj = info[0].As<Napi::Object>();
    EngineWrap* peer = unwrap(peerObj);
    AFD_CHECK(peer != nullptr, "Engine.attachFfn(ffnEngine): the argument is not an Engine");
    std::shared_ptr<Engine> peerEngine = peer->requireEngine("attachFfn");
    AFD_CHECK(peerEngine->ffnModel() != nullptr, "Engine.attachFfn(): the peer engine has role " << peerEngine->info().role
                                                                                             << "; it must be ffn");
    AFD_CHECK(peerEngine->config().hiddenSize == engine->config().hiddenSize &&
                  peerEngine->config().numLayers == engine->config().numLayers,
              "Engine.attachFfn(): the peer engine holds a different model");
    auto exec = std::make_shared<PeerFfnExecutor>(peerEngine, engine->backend());
    engine->setFfnExecutor(exec.get());
    ffnExecutor_ = std::move(exec);
    ffnPeer_ = peerEngine;
    ffnPeerRef_ = Napi::Persistent(peerObj);
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
  return env.Undefined();
}

// provideTokenMask(mask: Int32Array | null): the deferred mask of the oldest submitted step
// still without one (copied), or null to withdraw it. Synchronous; never waits on a step.
Napi::Value EngineWrap::ProvideTokenMask(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    std::shared_ptr<Engine> engine = requireEngine("provideTokenMask");
    AFD_CHECK(info.Length() >= 1 && (info[0].IsNull() ||
                                     (info[0].IsTypedArray() && info[0].As<Napi::TypedArray>().TypedArrayType() == napi_int32_array)),
              "Engine.provideTokenMask(mask): mask must be an Int32Array (the allowed-token bitmask rows) or null (withdraw)");
    if (info[0].IsNull()) {
      engine->provideTokenMask(nullptr, 0);
    } else {
      auto mask = info[0].As<Napi::Int32Array>();
      static const int32_t kNoWords = 0;  // an empty mask is a length error, not a withdrawal
      engine->provideTokenMask(mask.ElementLength() > 0 ? mask.Data() : &kNoWords, mask.ElementLength());
    }
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
  return env.Undefined();
}

Napi::Value EngineWrap::Info(const Napi::CallbackInfo& info) {
  try {
    return engineInfoToJs(info.Env(), requireEngine("info")->info());
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

Napi::Value EngineWrap::Stats(const Napi::CallbackInfo& info) {
  try {
    return engineStatsToJs(info.Env(), requireEngine("stats")->stats());
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

// Synchronous: it waits for the step in flight (the step mutex) and the device's queue.
Napi::Value EngineWrap::ProfilerRange(const Napi::CallbackInfo& info) {
  try {
    AFD_CHECK(info.Length() == 1 && info[0].IsBoolean(), "Engine.profilerRange(start): start must be a boolean");
    requireEngine("profilerRange")->profilerRange(info[0].As<Napi::Boolean>().Value());
    return info.Env().Undefined();
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

Napi::Value EngineWrap::Close(const Napi::CallbackInfo& info) {
  // In-flight workers hold their own shared_ptr, so the model is freed after them; a step
  // waiting for its token mask fails now instead of at its timeout.
  if (engine_) engine_->withdrawTokenMasks("token mask withdrawn: the engine was closed");
  engine_.reset();
  ffnExecutor_.reset();
  ffnPeer_.reset();
  if (!ffnPeerRef_.IsEmpty()) ffnPeerRef_.Reset();
  return info.Env().Undefined();
}

}  // namespace afd::binding
