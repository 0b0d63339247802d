// Compiled (syntax only) by ctest target.policy_fail_*: a target type that misses a member must not
// compile, and the error must say which member in words (target/policy.hpp).
#include "npusim/target/describe.hpp"

using namespace npusim;

struct Broken {
  static constexpr std::string_view name = "broken";
  using op_list = meta::list<ops::Relu>;
  using pattern_list = meta::list<>;
  static constexpr DType dtypes[] = {DType::f32};
#if NPUSIM_BROKEN == 1
  // no fallback
#elif NPUSIM_BROKEN == 2
  struct Later;
  using fallback = Later;  // declared, never defined here
#else
  using fallback = no_fallback;  // the control: compiles
#endif
};

partition::TargetInfo info() { return describe_target<Broken>(); }
