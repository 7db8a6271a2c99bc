#include "core/deepseek-ops.h"

#include "core/error.h"

namespace afd {

RouterScoring parseRouterScoring(const std::string& name) {
  if (name == "softmax") return RouterScoring::Softmax;
  if (name == "sigmoid") return RouterScoring::Sigmoid;
  AFD_FAIL("scoring_func \"" << name << "\" is not supported (supported: softmax, sigmoid)");
}

RouterTopkMethod parseRouterTopkMethod(const std::string& name) {
  if (name == "greedy") return RouterTopkMethod::Greedy;
  if (name == "group_limited_greedy") return RouterTopkMethod::GroupLimitedGreedy;
  if (name == "noaux_tc") return RouterTopkMethod::NoauxTc;
  AFD_FAIL("topk_method \"" << name << "\" is not supported (supported: greedy, group_limited_greedy, noaux_tc)");
}

const char* routerTopkMethodName(RouterTopkMethod m) {
  switch (m) {
    case RouterTopkMethod::Greedy: return "greedy";
    case RouterTopkMethod::GroupLimitedGreedy: return "group_limited_greedy";
    case RouterTopkMethod::NoauxTc: return "noaux_tc";
  }
  return "?";
}

}  // namespace afd
