// A dependency cycle is rejected with a witness listing the cycle's tasks.
// EXPECT: "cycle: COPY#0 -> \(counter 0\) -> COPY#1 -> \(counter 1\) -> COPY#0 \(2 tasks\)"
#include "fail_programs.hpp"

constexpr auto make() {
  auto p = fail_cases::chain();
#ifdef OCTO_MUST_FAIL
  p.tasks[0].waits = {{1, 1}};
#endif
  return p;
}
OCTO_STATIC_VALIDATE([] { return make(); });
