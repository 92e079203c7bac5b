// An unsatisfiable wait (a counter no task signals) is rejected at compile time, naming task and counter.
// EXPECT: fixed_message<[0-9]+>\{"deadlock: COPY#1 waits on counter 2, which no task signals"\}
#include "fail_programs.hpp"

constexpr auto make() {
  auto p = fail_cases::chain();
#ifdef OCTO_MUST_FAIL
  p.tasks[1].waits.push_back({2, 1});
#endif
  return p;
}
OCTO_STATIC_VALIDATE([] { return make(); });
