#include "testing/link-options-binding.h"

#include "binding/rank-config.h"
#include "runtime/connectors.h"

namespace afd::binding {

Napi::Value LinkOptionsOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const AfdConnectorOptions o = connectorOptionsOf(info[0], "linkOptionsOf(config)");
  Napi::Object out = Napi::Object::New(env);
  out.Set("numAttention", o.topology.numAttention);
  out.Set("numFfn", o.topology.numFfn);
  out.Set("rank", o.rank);
  out.Set("host", o.host);
  Napi::Array hosts = Napi::Array::New(env, o.ffnHosts.size());
  for (size_t i = 0; i < o.ffnHosts.size(); ++i) hosts.Set(static_cast<uint32_t>(i), o.ffnHosts[i]);
  out.Set("ffnHosts", hosts);
  out.Set("listenHost", o.listenHost);
  out.Set("basePort", o.basePort);
  out.Set("stepDeadlineMs", o.stepDeadlineMs);
  out.Set("rendezvousTimeoutMs", o.rendezvousTimeoutMs);
  out.Set("rendezvousId", o.rendezvousId);
  out.Set("connector", nameOf(o.connector));
  out.Set("expertParallel", o.expertParallel);
  out.Set("epTransport", o.epTransport ? Napi::Value(Napi::String::New(env, nameOf(*o.epTransport))) : env.Null());
  out.Set("ffnGraphs", o.ffnGraphs);
  out.Set("maxStepTokens", o.maxStepTokens);
  return out;
}

}  // namespace afd::binding
