#include "binding/afd-binding.h"

#include <functional>
#include <string>
#include <thread>

#include "binding/engine-binding.h"
#include "binding/rank-config.h"

namespace afd::binding {
namespace {

// Runs `work` on its own thread and settles a Promise on the JS thread with its string
// result (undefined unless returnsString) or its error message. Rendezvous and loop
// waits block for a long time, so they must not sit on libuv's small worker pool (four
// FFN servers waiting for peers would starve the attention ranks' connects).
// keepAlive=false: the pending Promise does not keep the process alive.
Napi::Promise settleOnThread(Napi::Env env, std::function<std::string()> work, bool returnsString = false,
                             bool keepAlive = true) {
  auto deferred = std::make_shared<Napi::Promise::Deferred>(Napi::Promise::Deferred::New(env));
  auto noop = Napi::Function::New(env, [](const Napi::CallbackInfo&) {});
  Napi::ThreadSafeFunction tsfn = Napi::ThreadSafeFunction::New(env, noop, "afd:runtime", 0, 1);
  if (!keepAlive) tsfn.Unref(env);
  Napi::Promise promise = deferred->Promise();
  std::thread([tsfn, deferred, work = std::move(work), returnsString]() mutable {
    struct Outcome {
      bool ok = true;
      std::string text;
    };
    auto* outcome = new Outcome;
    try {
      outcome->text = work();
    } catch (const std::exception& e) {
      outcome->ok = false;
      outcome->text = e.what();
    }
    napi_status st = tsfn.BlockingCall(outcome, [deferred, returnsString](Napi::Env e, Napi::Function, Outcome* o) {
      try {
        if (o->ok) {
          deferred->Resolve(returnsString ? Napi::String::New(e, o->text) : e.Undefined());
        } else {
          deferred->Reject(Napi::Error::New(e, o->text).Value());
        }
      } catch (const Napi::Error&) {
        // The environment is being torn down (a process exiting with this promise still
        // pending): nobody can observe the outcome, and throwing here would abort Node.
      }
      delete o;
    });
    if (st != napi_ok) delete outcome;  // the environment is shutting down
    tsfn.Release();
  }).detach();
  return promise;
}

template <typename F>
auto rethrowAsJs(Napi::Env env, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

}  // namespace

// ---- AttentionLink -----------------------------------------------------------------

Napi::Function AttentionLinkWrap::Define(Napi::Env env) {
  return DefineClass(env, "AttentionLink",
                     {InstanceMethod<&AttentionLinkWrap::Connect>("connect"),
                      InstanceMethod<&AttentionLinkWrap::Close>("close"),
                      InstanceMethod<&AttentionLinkWrap::State>("state")});
}

AttentionLinkWrap::AttentionLinkWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<AttentionLinkWrap>(info) {
  Napi::Env env = info.Env();
  const char* what = "new AttentionLink(engine, config)";
  std::shared_ptr<Engine> engine = EngineWrap::engineOf(info[0], what);
  AfdConnectorOptions options = connectorOptionsOf(info[1], what);
  link_ = rethrowAsJs(env, [&] { return std::make_shared<AfdAttentionLink>(engine, options); });
}

AttentionLinkWrap::~AttentionLinkWrap() {
  if (link_) link_->close(false, "attention rank closed");
}

Napi::Value AttentionLinkWrap::Connect(const Napi::CallbackInfo& info) {
  std::shared_ptr<AfdAttentionLink> link = link_;
  return settleOnThread(info.Env(), [link] {
    link->connect();
    return std::string();
  });
}

Napi::Value AttentionLinkWrap::Close(const Napi::CallbackInfo& info) {
  bool shutdown = true;
  std::string reason = "attention rank stopped";
  if (info.Length() > 0 && info[0].IsObject()) {
    Napi::Object o = info[0].As<Napi::Object>();
    if (o.Get("shutdown").IsBoolean()) shutdown = o.Get("shutdown").As<Napi::Boolean>().Value();
    if (o.Get("reason").IsString()) reason = o.Get("reason").As<Napi::String>().Utf8Value();
  }
  std::shared_ptr<AfdAttentionLink> link = link_;
  return settleOnThread(info.Env(), [link, shutdown, reason] {
    link->close(shutdown, reason);
    return std::string();
  });
}

Napi::Value AttentionLinkWrap::State(const Napi::CallbackInfo& info) {
  AfdAttentionLink::Snapshot s = link_->snapshot();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("state", AfdAttentionLink::stateName(s.state));
  o.Set("peer", s.peer);
  o.Set("lastError", s.lastError);
  o.Set("reconnects", static_cast<double>(s.reconnects));
  o.Set("emptySteps", static_cast<double>(s.emptySteps));
  return o;
}

// ---- FfnServer -----------------------------------------------------------------------

Napi::Function FfnServerWrap::Define(Napi::Env env) {
  return DefineClass(env, "FfnServer",
                     {InstanceMethod<&FfnServerWrap::Start>("start"), InstanceMethod<&FfnServerWrap::Wait>("wait"),
                      InstanceMethod<&FfnServerWrap::Stop>("stop"), InstanceMethod<&FfnServerWrap::State>("state"),
                      InstanceMethod<&FfnServerWrap::Step>("step"),
                      InstanceMethod<&FfnServerWrap::ExpertStats>("expertStats")});
}

FfnServerWrap::FfnServerWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<FfnServerWrap>(info) {
  Napi::Env env = info.Env();
  const char* what = "new FfnServer(engine, config)";
  std::shared_ptr<Engine> engine = EngineWrap::engineOf(info[0], what);
  AfdConnectorOptions options = connectorOptionsOf(info[1], what);
  loop_ = rethrowAsJs(env, [&] { return std::make_shared<FfnLoop>(engine, options); });
}

FfnServerWrap::~FfnServerWrap() {
  if (loop_) loop_->stop();
}

Napi::Value FfnServerWrap::Start(const Napi::CallbackInfo& info) {
  rethrowAsJs(info.Env(), [&] { loop_->start(); });
  std::shared_ptr<FfnLoop> server = loop_;
  return settleOnThread(info.Env(), [server] {
    server->waitReady();
    return std::string();
  });
}

Napi::Value FfnServerWrap::Wait(const Napi::CallbackInfo& info) {
  std::shared_ptr<FfnLoop> server = loop_;
  return settleOnThread(info.Env(), [server] { return server->waitExit(); }, true, false);
}

Napi::Value FfnServerWrap::Stop(const Napi::CallbackInfo& info) {
  std::shared_ptr<FfnLoop> server = loop_;
  return settleOnThread(info.Env(), [server] {
    server->stop();
    return std::string();
  });
}

Napi::Value FfnServerWrap::State(const Napi::CallbackInfo& info) {
  FfnLoop::Snapshot s = loop_->snapshot();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("state", FfnLoop::stateName(s.state));
  o.Set("peersJoined", s.peersJoined);
  o.Set("blockSize", s.blockSize);
  o.Set("firstAttentionRank", s.firstAttentionRank);
  o.Set("listenAddress", s.listenAddress);
  o.Set("lastError", s.lastError);
  o.Set("peerLosses", static_cast<double>(s.peerLosses));
  o.Set("exitReason", s.exitReason);
  return o;
}

Napi::Value FfnServerWrap::ExpertStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  EpFfnGroup* group = loop_->expertGroup();
  if (group == nullptr) return env.Null();
  EpStats& st = group->stats();
  auto column = [&](const std::unique_ptr<std::atomic<uint64_t>[]>& c) {
    Napi::Array a = Napi::Array::New(env, st.numLayers);
    for (int L = 0; L < st.numLayers; ++L) a.Set(static_cast<uint32_t>(L), static_cast<double>(c[L].load()));
    return a;
  };
  Napi::Object o = Napi::Object::New(env);
  o.Set("rank", group->mesh().rank());
  o.Set("numRanks", group->mesh().numRanks());
  o.Set("expertStart", group->experts().start);
  o.Set("expertEnd", group->experts().end);
  o.Set("numExperts", st.numExperts);
  o.Set("groupListenAddress", group->mesh().listenAddress());
  Napi::Array tokens = Napi::Array::New(env, st.numLayers);
  for (int L = 0; L < st.numLayers; ++L) {
    Napi::Array row = Napi::Array::New(env, st.numExperts);
    for (int e = 0; e < st.numExperts; ++e) row.Set(static_cast<uint32_t>(e), static_cast<double>(st.tokens(L, e).load()));
    tokens.Set(static_cast<uint32_t>(L), row);
  }
  o.Set("tokensPerExpert", tokens);
  o.Set("dispatchSentBytes", column(st.dispatchSentBytes));
  o.Set("dispatchReceivedBytes", column(st.dispatchReceivedBytes));
  o.Set("combineSentBytes", column(st.combineSentBytes));
  o.Set("combineReceivedBytes", column(st.combineReceivedBytes));
  o.Set("exchangeMs", static_cast<double>(st.exchangeUs.load()) / 1000.0);
  o.Set("groupSteps", static_cast<double>(st.groupSteps.load()));
  return o;
}

Napi::Value FfnServerWrap::Step(const Napi::CallbackInfo& info) {
  throw Napi::Error::New(info.Env(),
                         "FfnServer.step(): the FFN role is connector-driven, not scheduler-driven; it has no "
                         "scheduler, KV cache or sampler. Send requests to an attention rank; its steps reach this "
                         "FFN rank over the connector.");
}

}  // namespace afd::binding
