// A partial wait on a counter shared by two producers (first-k-of-N) is a race.
// EXPECT: "race: COPY#2 waits on counter 0 with threshold 1 but 2 tasks signal it
#include "fail_programs.hpp"

constexpr auto make() {
  auto p = fail_cases::chain();
  // a second tile writes `a` and signals counter 0 too
  p.tasks.insert(p.tasks.begin() + 1, p.tasks[0]);
  for (std::size_t i = 0; i < p.tasks.size(); ++i) p.tasks[i].id = static_cast<std::int32_t>(i);
#ifdef OCTO_MUST_FAIL
  p.tasks[2].waits = {{0, 1}};
#else
  p.tasks[2].waits = {{0, 2}};
#endif
  return p;
}
OCTO_STATIC_VALIDATE([] { return make(); });
