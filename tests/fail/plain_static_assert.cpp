// Plain static_assert over validate() works too (without the message in the diagnostic).
// EXPECT: static assertion failed
#include <octo/ir/validate.hpp>

#include "fail_programs.hpp"

constexpr auto make() {
  auto p = fail_cases::chain();
#ifdef OCTO_MUST_FAIL
  p.tasks[0].params.set_real(octo::ir::param_key::hidden, 2.5);  // an int32 field holding a real
#endif
  return p;
}
static_assert(octo::validate(make()).ok);
static_assert(octo::validate(make()).warnings.empty());
