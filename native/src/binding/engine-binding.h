// N-API class Engine: load / step / ffnForward and the KV / state transfers run on worker
// threads and return Promises; info() and stats() are synchronous getters; provideTokenMask() hands a
// waiting step its deferred token mask; close() releases the model.
#pragma once
#include <napi.h>

#include <memory>

#include "model/ffn-executor.h"
#include "runtime/engine/engine.h"

namespace afd::binding {

class EngineWrap : public Napi::ObjectWrap<EngineWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit EngineWrap(const Napi::CallbackInfo& info);
  // The loaded engine of a JS Engine object, for other bindings (AFD AttentionLink /
  // FfnServer); throws a Napi::Error naming `what` when value is not a loaded Engine.
  static std::shared_ptr<Engine> engineOf(const Napi::Value& value, const char* what);
  // The EngineWrap behind a JS Engine object; null for anything else.
  static EngineWrap* unwrap(const Napi::Value& value);

 private:
  Napi::Value Load(const Napi::CallbackInfo& info);
  Napi::Value Step(const Napi::CallbackInfo& info);
  Napi::Value FfnForward(const Napi::CallbackInfo& info);
  Napi::Value AttachFfn(const Napi::CallbackInfo& info);
  Napi::Value ProvideTokenMask(const Napi::CallbackInfo& info);
  // engine-transfer-binding.cc: KV blocks / state slot out (Uint8Array) and in.
  Napi::Value ExportKvBlocks(const Napi::CallbackInfo& info);
  Napi::Value ImportKvBlocks(const Napi::CallbackInfo& info);
  Napi::Value ExportStateSlot(const Napi::CallbackInfo& info);
  Napi::Value ImportStateSlot(const Napi::CallbackInfo& info);
  // engine-peer-binding.cc: the same by peer memory on one host.
  Napi::Value KvShareDescriptorJs(const Napi::CallbackInfo& info);
  Napi::Value KvFence(const Napi::CallbackInfo& info);
  Napi::Value OpenKvPeer(const Napi::CallbackInfo& info);
  Napi::Value PullKvBlocks(const Napi::CallbackInfo& info);
  Napi::Value PullStateSlot(const Napi::CallbackInfo& info);
  Napi::Value CloseKvPeer(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value ProfilerRange(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  std::shared_ptr<Engine> requireEngine(const char* what) const;

  std::shared_ptr<Engine> engine_;
  bool loading_ = false;
  // attachFfn: the FFN engine (kept alive) and the executor that reaches it.
  std::shared_ptr<Engine> ffnPeer_;
  std::shared_ptr<FfnExecutor> ffnExecutor_;
  Napi::ObjectReference ffnPeerRef_;
};

}  // namespace afd::binding
