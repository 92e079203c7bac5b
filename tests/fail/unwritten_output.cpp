// Every IO_OUTPUT must be written by some task.
// EXPECT: "output buffer 3 \(logits\) is never written by any task"
#include "fail_programs.hpp"

constexpr auto make() {
  auto p = fail_cases::chain();
#ifdef OCTO_MUST_FAIL
  p.add_buffer("logits", octo::ir::buffer_kind::io_output, octo::ir::dtype::f32, {1, 4});
#endif
  return p;
}
OCTO_STATIC_VALIDATE([] { return make(); });
