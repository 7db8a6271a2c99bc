#include "binding/afd-binding.h"

#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "binding/engine-binding.h"
#include "core/debug-env.h"

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

// The one place an option string becomes a connector or transport enum: `value` names
// one of `kinds` (runtime/connectors.h), or is "auto" where allowAuto (nullopt: the
// runtime picks). Anything else is an error listing the valid values.
template <typename Kind, size_t N>
std::optional<Kind> parseKind(Napi::Env env, const char* what, const char* key, const std::string& value,
                              const std::array<Kind, N>& kinds, bool allowAuto) {
  if (allowAuto && value == "auto") return std::nullopt;
  for (Kind kind : kinds) {
    if (value == nameOf(kind)) return kind;
  }
  std::vector<std::string> valid;
  if (allowAuto) valid.push_back("auto");
  for (Kind kind : kinds) valid.push_back(nameOf(kind));
  std::string list;
  for (size_t i = 0; i < valid.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == valid.size() ? " or " : ", ") + ("\"" + valid[i] + "\"");
  }
  throw Napi::Error::New(env, std::string(what) + ": options." + key + " must be " + list + " (got \"" + value + "\")");
}

// Reads AfdLinkOptions (native/src/index.ts); each bad field is a named error.
AfdConnectorOptions toConnectorOptions(const Napi::Value& value, const char* what) {
  Napi::Env env = value.Env();
  if (!value.IsObject()) throw Napi::Error::New(env, std::string(what) + ": options must be an object");
  Napi::Object o = value.As<Napi::Object>();
  AfdConnectorOptions out;
  auto str = [&](const char* key, std::string& field) {
    Napi::Value v = o.Get(key);
    if (v.IsUndefined()) return;
    if (!v.IsString()) throw Napi::Error::New(env, std::string(what) + ": options." + key + " must be a string");
    field = v.As<Napi::String>().Utf8Value();
  };
  auto num = [&](const char* key, int& field, int min, int max) {
    Napi::Value v = o.Get(key);
    if (v.IsUndefined()) return;
    double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1e300;
    if (d != static_cast<int>(d) || d < min || d > max) {
      throw Napi::Error::New(env, std::string(what) + ": options." + key + " must be an integer in [" +
                                      std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    field = static_cast<int>(d);
  };
  // A resolved Topology (shared/src/topology/spec.ts): the C++ side reads its rank counts.
  Napi::Value topo = o.Get("topology");
  if (!topo.IsUndefined()) {
    auto ranks = [&](const char* role) {
      Napi::Value r = topo.IsObject() ? topo.As<Napi::Object>().Get(role) : env.Undefined();
      Napi::Value n = r.IsObject() ? r.As<Napi::Object>().Get("ranks") : env.Undefined();
      const double d = n.IsNumber() ? n.As<Napi::Number>().DoubleValue() : -1;
      if (!(d >= 1 && d <= 1024) || d != std::floor(d)) {
        throw Napi::Error::New(env, std::string(what) + ": options.topology." + role +
                                        ".ranks must be an integer in [1, 1024] (pass a Topology resolved by @afd/shared)");
      }
      return static_cast<int>(d);
    };
    out.topology.numAttention = ranks("attention");
    out.topology.numFfn = ranks("ffn");
  }
  num("rank", out.rank, 0, 1 << 20);
  str("host", out.host);
  str("listenHost", out.listenHost);
  std::string connector = "tcp", epTransport = "auto";
  str("connector", connector);
  str("rendezvousId", out.rendezvousId);
  str("epTransport", epTransport);
  out.epTransport = parseKind(env, what, "epTransport", epTransport, kEpTransports, true);
  out.connector = *parseKind(env, what, "connector", connector, kConnectorKinds, false);
  num("maxStepTokens", out.maxStepTokens, 1, 1 << 20);
  num("basePort", out.basePort, 0, 65535);
  num("stepDeadlineMs", out.stepDeadlineMs, 1, 3600000);
  num("rendezvousTimeoutMs", out.rendezvousTimeoutMs, 0, 1 << 30);
  auto flag = [&](const char* key, bool& field) {
    Napi::Value v = o.Get(key);
    if (v.IsUndefined()) return;
    if (!v.IsBoolean()) throw Napi::Error::New(env, std::string(what) + ": options." + key + " must be a boolean");
    field = v.As<Napi::Boolean>().Value();
  };
  flag("expertParallel", out.expertParallel);
  flag("ffnGraphs", out.ffnGraphs);
  Napi::Value hosts = o.Get("ffnHosts");
  if (!hosts.IsUndefined()) {
    if (!hosts.IsArray()) throw Napi::Error::New(env, std::string(what) + ": options.ffnHosts must be an array of strings");
    Napi::Array a = hosts.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i) {
      if (!a.Get(i).IsString()) throw Napi::Error::New(env, std::string(what) + ": options.ffnHosts must hold strings");
      out.ffnHosts.push_back(a.Get(i).As<Napi::String>().Utf8Value());
    }
  }
  // The debugging overrides of the environment (core/debug-env.h) win over the options.
  try {
    const DebugEnv& debug = debugEnv();
    if (debug.graphsOff) out.ffnGraphs = false;
    if (debug.faultFfnLayerDelayUs) out.faultLayerDelayUs = *debug.faultFfnLayerDelayUs;
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, std::string(what) + ": " + e.what());
  }
  return out;
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
  const char* what = "new AttentionLink(engine, options)";
  std::shared_ptr<Engine> engine = EngineWrap::engineOf(info[0], what);
  AfdConnectorOptions options = toConnectorOptions(info[1], what);
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
  const char* what = "new FfnServer(engine, options)";
  std::shared_ptr<Engine> engine = EngineWrap::engineOf(info[0], what);
  AfdConnectorOptions options = toConnectorOptions(info[1], what);
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
