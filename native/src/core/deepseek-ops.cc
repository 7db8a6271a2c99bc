#include "core/deepseek-ops.h"

#include "core/enum-names.h"
#include "core/error.h"

namespace afd {

namespace {
// RouterScoring::None is internal (dense routing weights sent by the attention role): no config names it.
constexpr EnumName<RouterScoring> kRouterScorings[] = {{RouterScoring::Softmax, "softmax"}, {RouterScoring::Sigmoid, "sigmoid"}};
constexpr EnumName<RouterTopkMethod> kRouterTopkMethods[] = {
    {RouterTopkMethod::Greedy, "greedy"}, {RouterTopkMethod::GroupLimitedGreedy, "group_limited_greedy"}, {RouterTopkMethod::NoauxTc, "noaux_tc"}};
}  // namespace

RouterScoring parseRouterScoring(const std::string& name) {
  if (const auto scoring = enumOfName(kRouterScorings, name)) return *scoring;
  AFD_FAIL("scoring_func \"" << name << "\" is not supported (supported: softmax, sigmoid)");
}

RouterTopkMethod parseRouterTopkMethod(const std::string& name) {
  if (const auto method = enumOfName(kRouterTopkMethods, name)) return *method;
  AFD_FAIL("topk_method \"" << name << "\" is not supported (supported: greedy, group_limited_greedy, noaux_tc)");
}

const char* routerTopkMethodName(RouterTopkMethod m) { return nameOfEnum(kRouterTopkMethods, m); }

}  // namespace afd
