// A program outside the octo tree: include <octo.hpp>, check a program at compile time, print the version.
#include <octo.hpp>

#include <cstdio>

namespace {
constexpr octo::ir::program make_program() {
  octo::ir::program p;
  auto x = p.add_buffer("x", octo::ir::buffer_kind::io_input, octo::ir::dtype::f32, {1, 4});
  auto y = p.add_buffer("y", octo::ir::buffer_kind::io_output, octo::ir::dtype::f32, {1, 4});
  octo::ir::task t;
  t.op = octo::ir::opcode::copy;
  t.inputs = {x};
  t.outputs = {y};
  t.out_counter = p.add_counter("copied");
  p.add_task(t);
  return p;
}
static_assert(make_program().tasks.size() == 1);
}  // namespace

int main() {
  std::printf("octo %s: a %zu-task program\n", std::string(octo::version()).c_str(), make_program().tasks.size());
  return 0;
}
