// Tiny programs for the must-fail-to-compile cases: each case breaks one rule under OCTO_MUST_FAIL.
#pragma once

#include <octo/ir/static_check.hpp>

namespace fail_cases {

using namespace octo::ir;

/// in -> COPY#0 -> a -> COPY#1 -> out, COPY#1 waiting (counter 0, 1); counter 2 exists but nobody signals it.
constexpr program chain() {
  program p;
  auto in = p.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  auto a = p.add_buffer("a", buffer_kind::activation, dtype::f32, {4});
  auto out = p.add_buffer("out", buffer_kind::io_output, dtype::f32, {4});
  auto c0 = p.add_counter("a ready"), c1 = p.add_counter("done");
  p.add_counter("spare");
  p.add_task(task{0, opcode::copy, {in}, {a}, c0, {}, {}, unassigned_sm, 0, 0, {}});
  p.add_task(task{0, opcode::copy, {a}, {out}, c1, {{c0, 1}}, {}, unassigned_sm, 0, 0, {}});
  return p;
}

}  // namespace fail_cases
