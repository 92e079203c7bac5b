// A layer's per-opcode table without a row for one opcode fails to compile, naming the opcode.
// EXPECT: Op = octo::ir::opcode::softmax
#include <array>
#include <cstddef>

#include "octo/ir/op_registry.hpp"

namespace {

struct row {
  octo::ir::opcode op;
};

#ifdef OCTO_MUST_FAIL
constexpr std::size_t skipped = static_cast<std::size_t>(octo::ir::opcode::softmax);
#else
constexpr std::size_t skipped = octo::ir::opcode_count;  // none
#endif

// Every opcode of the table but `skipped`, in reverse order (by_opcode does not rely on the order).
constexpr auto rows = [] {
  std::array<row, octo::ir::opcode_count - (skipped < octo::ir::opcode_count ? 1 : 0)> r{};
  std::size_t n = 0;
  for (std::size_t i = octo::ir::opcode_count; i-- > 0;)
    if (i != skipped) r[n++] = {static_cast<octo::ir::opcode>(i)};
  return r;
}();

constexpr auto table = octo::ir::by_opcode<rows>();
static_assert(table[static_cast<std::size_t>(octo::ir::opcode::add)].op == octo::ir::opcode::add);

}  // namespace
