// Reading an activation with no happens-before path from its writer is a race.
// EXPECT: "race: COPY#1 reads buffer 1 \(a\) with no happens-before path from a writer \(e\.g\. COPY#0\)"
#include "fail_programs.hpp"

constexpr auto make() {
  auto p = fail_cases::chain();
#ifdef OCTO_MUST_FAIL
  p.tasks[1].waits.clear();
#endif
  return p;
}
static_assert(octo::ir::assert_valid<[] { return make(); }>());
