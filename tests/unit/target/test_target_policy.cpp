// The target contract (target/policy.hpp): the shipped targets satisfy it, a type that misses a
// member does not, and program::validate names no target (a program whose fallback is another
// target than the reference validates; one whose target part names another target does not).
#include "../../common/compile_util.hpp"
#include "../../common/test_util.hpp"
#include "npusim/cpu.hpp"
#include "npusim/program/validate.hpp"
#include "npusim/target/policy.hpp"

using namespace npusim;

namespace {

struct Minimal {
  static constexpr std::string_view name = "minimal";
  using op_list = meta::list<ops::Relu>;
  using pattern_list = meta::list<>;
  static constexpr DType dtypes[] = {DType::f32};
  using fallback = no_fallback;
};
struct NoFallbackMember {
  static constexpr std::string_view name = "nofallback";
  using op_list = meta::list<ops::Relu>;
  using pattern_list = meta::list<>;
  static constexpr DType dtypes[] = {DType::f32};
};
struct NotAnOp {};
struct BadOpList : Minimal {
  using op_list = meta::list<NotAnOp>;
};
struct BadRefuse : Minimal {
  static int refuse(int);
};
struct NoDtypes {
  static constexpr std::string_view name = "nodtypes";
  using op_list = meta::list<>;
  using pattern_list = meta::list<>;
  using fallback = no_fallback;
};

static_assert(TargetPolicy<ReferenceTarget> && TargetPolicy<CpuTarget>);
static_assert(TargetPolicy<Minimal>);
static_assert(!TargetPolicy<NoFallbackMember>, "fallback is required (no_fallback says there is none)");
static_assert(!TargetPolicy<BadOpList>, "op_list holds op policies only");
static_assert(!TargetPolicy<BadRefuse>, "refuse has the compiler's signature");
static_assert(!TargetPolicy<NoDtypes>, "dtypes is required");
static_assert(std::is_same_v<CpuTarget::fallback, ReferenceTarget>);
static_assert(target_name<ReferenceTarget>::value == ReferenceTarget::name && target_name<CpuTarget>::value == "cpu");
static_assert(target_name<no_fallback>::value.empty());

}  // namespace

TEST(TargetPolicy, FallbackNameComesFromTheFallbackType) {
  EXPECT_EQ(describe_target<CpuTarget>().fallback, "reference");
  EXPECT_EQ(describe_target<Minimal>().fallback, "");  // no_fallback: refused nodes are an error
}

// validate() checks partition targets without naming one: target parts name the program's target,
// fallback parts all name one target.
TEST(TargetPolicy, ValidateNamesNoTarget) {
  const ir::Graph g = ir::read_ir_file(test::data("ops/tanh_exp/ir.json"));
  program::CompileOptions o;
  o.evaluator = evaluator_for<CpuTarget>();
  o.force = partition::ForceFallback::parse("tanh");
  program::CompiledProgram p = program::compile(g, describe_target<CpuTarget>(), o);
  ASSERT_NO_THROW(program::validate(p));
  bool has_fallback = false;
  for (auto& part : p.partitions) has_fallback |= part.fallback;
  ASSERT_TRUE(has_fallback);
  ASSERT_GE(p.partitions.size(), 2u);
  // A fallback named otherwise than "reference" is still one fallback: valid.
  for (auto& part : p.partitions)
    if (part.fallback) part.target = "another";
  EXPECT_NO_THROW(program::validate(p));
  // A target part that names another target than the program's is not.
  for (auto& part : p.partitions)
    if (!part.fallback) part.target = "another";
  NPUSIM_EXPECT_ERROR(program::validate(p), "a target partition of another target than the program's", "another");
}
