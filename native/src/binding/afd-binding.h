// N-API classes of the AFD runtime: AttentionLink (an attention-role Engine joined to
// its FFN rank over the TCP connector) and FfnServer (the FFN role's daemon loop, FfnLoop).
// Blocking work (rendezvous, stop) runs on worker threads and returns Promises; state()
// getters are synchronous; the per-layer counters are in Engine.stats().
#pragma once
#include <napi.h>

#include <memory>

#include "runtime/afd/attention-link.h"
#include "runtime/afd/ffn-loop.h"

namespace afd::binding {

class AttentionLinkWrap : public Napi::ObjectWrap<AttentionLinkWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit AttentionLinkWrap(const Napi::CallbackInfo& info);
  ~AttentionLinkWrap() override;

 private:
  Napi::Value Connect(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value State(const Napi::CallbackInfo& info);

  std::shared_ptr<AfdAttentionLink> link_;
};

class FfnServerWrap : public Napi::ObjectWrap<FfnServerWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit FfnServerWrap(const Napi::CallbackInfo& info);
  ~FfnServerWrap() override;

 private:
  Napi::Value Start(const Napi::CallbackInfo& info);
  Napi::Value Wait(const Napi::CallbackInfo& info);
  Napi::Value Stop(const Napi::CallbackInfo& info);
  Napi::Value State(const Napi::CallbackInfo& info);
  Napi::Value Step(const Napi::CallbackInfo& info);
  Napi::Value ExpertStats(const Napi::CallbackInfo& info);

  std::shared_ptr<FfnLoop> loop_;
};

}  // namespace afd::binding
