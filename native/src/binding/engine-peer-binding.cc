// Engine.kvShareDescriptor / kvFence / openKvPeer / pullKvBlocks / pullStateSlot /
// closeKvPeer: prefill / decode disaggregation by peer memory (runtime/engine/kv-peer.h).
// The descriptor is read at once; the others that wait for the device run on a worker
// thread and return a Promise.
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "binding/engine-binding.h"
#include "binding/promise-worker.h"

namespace afd::binding {
namespace {

Napi::Uint8Array bytesOf(Napi::Env env, const std::vector<uint8_t>& bytes) {
  auto out = Napi::Uint8Array::New(env, bytes.size());
  std::copy(bytes.begin(), bytes.end(), out.Data());
  return out;
}

std::vector<uint8_t> bytesField(const Napi::Object& o, const char* name, const char* usage, bool optional) {
  Napi::Value v = o.Get(name);
  if (optional && (v.IsNull() || v.IsUndefined())) return {};
  AFD_CHECK(v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array,
            usage << ": descriptor." << name << " must be a Uint8Array");
  auto a = v.As<Napi::Uint8Array>();
  return std::vector<uint8_t>(a.Data(), a.Data() + a.ByteLength());
}

double numberField(const Napi::Object& o, const char* name, const char* usage) {
  Napi::Value v = o.Get(name);
  AFD_CHECK(v.IsNumber(), usage << ": descriptor." << name << " must be a number");
  const double n = v.As<Napi::Number>().DoubleValue();
  AFD_CHECK(n >= 0 && n == static_cast<double>(static_cast<int64_t>(n)), usage << ": descriptor." << name << " must be a whole number >= 0 (got " << n << ")");
  return n;
}

KvShareDescriptor descriptorArg(const Napi::CallbackInfo& info, const char* usage) {
  AFD_CHECK(info.Length() >= 1 && info[0].IsObject(), usage << ": the descriptor must be an object (another engine's kvShareDescriptor())");
  Napi::Object o = info[0].As<Napi::Object>();
  KvShareDescriptor d;
  Napi::Value kind = o.Get("kind");
  AFD_CHECK(kind.IsString(), usage << ": descriptor.kind must be a string");
  d.kind = kind.As<Napi::String>().Utf8Value();
  d.kv = bytesField(o, "kv", usage, false);
  d.kvBytes = static_cast<uint64_t>(numberField(o, "kvBytes", usage));
  d.state = bytesField(o, "state", usage, true);
  d.stateBytes = static_cast<uint64_t>(numberField(o, "stateBytes", usage));
  d.numKvBlocks = static_cast<int>(numberField(o, "numKvBlocks", usage));
  d.numStateSlots = static_cast<int>(numberField(o, "numStateSlots", usage));
  return d;
}

int intArg(const Napi::CallbackInfo& info, size_t index, const char* name, const char* usage) {
  AFD_CHECK(info.Length() > index && info[index].IsNumber(), usage << ": " << name << " must be a number");
  const double n = info[index].As<Napi::Number>().DoubleValue();
  AFD_CHECK(n == static_cast<double>(static_cast<int>(n)), usage << ": " << name << " must be an integer (got " << n << ")");
  return static_cast<int>(n);
}

std::vector<int32_t> idsArg(const Napi::CallbackInfo& info, size_t index, const char* name, const char* usage) {
  AFD_CHECK(info.Length() > index && info[index].IsTypedArray() &&
                info[index].As<Napi::TypedArray>().TypedArrayType() == napi_int32_array,
            usage << ": " << name << " must be an Int32Array");
  auto ids = info[index].As<Napi::Int32Array>();
  return std::vector<int32_t>(ids.Data(), ids.Data() + ids.ElementLength());
}

// Queues `work` and returns its promise, resolved with what `result` makes of the outcome.
Napi::Value queue(Napi::Env env, std::function<void()> work, std::function<Napi::Value(Napi::Env)> result) {
  auto* worker = new PromiseWorker(env, std::move(work), std::move(result));
  worker->Queue();
  return worker->promise();
}

Napi::Value undefinedOf(Napi::Env env) { return env.Undefined(); }

}  // namespace

Napi::Value EngineWrap::KvShareDescriptorJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::optional<KvShareDescriptor> d;
  try {
    d = requireEngine("kvShareDescriptor")->kvShareDescriptor();
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
  if (!d) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("kind", d->kind);
  o.Set("kv", bytesOf(env, d->kv));
  o.Set("kvBytes", static_cast<double>(d->kvBytes));
  o.Set("state", d->state.empty() ? env.Null() : static_cast<Napi::Value>(bytesOf(env, d->state)));
  o.Set("stateBytes", static_cast<double>(d->stateBytes));
  o.Set("numKvBlocks", d->numKvBlocks);
  o.Set("numStateSlots", d->numStateSlots);
  return o;
}

Napi::Value EngineWrap::KvFence(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  try {
    engine = requireEngine("kvFence");
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  return queue(env, [engine] { engine->kvFence(); }, undefinedOf);
}

Napi::Value EngineWrap::OpenKvPeer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  KvShareDescriptor d;
  try {
    engine = requireEngine("openKvPeer");
    d = descriptorArg(info, "Engine.openKvPeer(descriptor)");
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  auto id = std::make_shared<int>(0);
  return queue(env, [engine, d, id] { *id = engine->openKvPeer(d); }, [id](Napi::Env e) -> Napi::Value { return Napi::Number::New(e, *id); });
}

Napi::Value EngineWrap::PullKvBlocks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  int peer = 0;
  std::vector<int32_t> src, dst;
  try {
    const char* usage = "Engine.pullKvBlocks(peer, srcIds, dstIds)";
    engine = requireEngine("pullKvBlocks");
    peer = intArg(info, 0, "peer", usage);
    src = idsArg(info, 1, "srcIds", usage);
    dst = idsArg(info, 2, "dstIds", usage);
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  return queue(env, [engine, peer, src = std::move(src), dst = std::move(dst)] { engine->pullKvBlocks(peer, src, dst); }, undefinedOf);
}

Napi::Value EngineWrap::PullStateSlot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  int peer = 0, srcSlot = 0, dstSlot = 0;
  try {
    const char* usage = "Engine.pullStateSlot(peer, srcSlot, dstSlot)";
    engine = requireEngine("pullStateSlot");
    peer = intArg(info, 0, "peer", usage);
    srcSlot = intArg(info, 1, "srcSlot", usage);
    dstSlot = intArg(info, 2, "dstSlot", usage);
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  return queue(env, [engine, peer, srcSlot, dstSlot] { engine->pullStateSlot(peer, srcSlot, dstSlot); }, undefinedOf);
}

Napi::Value EngineWrap::CloseKvPeer(const Napi::CallbackInfo& info) {
  try {
    requireEngine("closeKvPeer")->closeKvPeer(intArg(info, 0, "peer", "Engine.closeKvPeer(peer)"));
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
  return info.Env().Undefined();
}

}  // namespace afd::binding
