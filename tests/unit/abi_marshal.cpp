// Host-side marshalling of IR tasks and buffers into the ABI records (IR spec §8), against hand-written
// records and hand-computed float bit patterns.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include <octo/error.hpp>
#include <octo/ir/buffer.hpp>
#include <octo/ir/task.hpp>
#include <octo/vm/abi_marshal.hpp>

using namespace octo;
namespace abi = octo::vm::abi;

namespace {

ir::task gemv_task() {
  ir::task t;
  t.id = 7;
  t.op = ir::opcode::gemv_tile;
  t.inputs = {3, 1};
  t.outputs = {4};
  t.out_counter = 2;
  t.waits = {{0, 1}, {5, 3}};
  t.sm = 11;
  t.params.set(ir::param_key::K, 16).set(ir::param_key::N_tile, 32).set(ir::param_key::n_off, -3);
  t.params.items.push_back(ir::param{ir::param_key::unknown, false, 99, 0.0, "tile_hint"});
  return t;
}

/// The instruction as the GPU reads it: 32-bit words.
std::uint32_t word(const abi::instruction& ins, std::size_t byte_offset) {
  std::uint32_t w = 0;
  std::memcpy(&w, reinterpret_cast<const unsigned char*>(&ins) + byte_offset, 4);
  return w;
}

}  // namespace

TEST_CASE("a task becomes the instruction record, word for word") {
  abi::instruction ins = abi::marshal_task(gemv_task());
  CHECK(word(ins, 0) == 5);     // GEMV_TILE
  CHECK(word(ins, 4) == 2);     // n_inputs
  CHECK(word(ins, 8) == 1);     // n_outputs
  CHECK(word(ins, 12) == 2);    // n_waits
  CHECK(word(ins, 16) == 3);    // inputs[0]
  CHECK(word(ins, 20) == 1);    // inputs[1]
  CHECK(word(ins, 24) == 0);    // inputs[2]: unused entries are zero
  CHECK(word(ins, 48) == 4);    // outputs[0]
  CHECK(word(ins, 64) == 0);    // wait_counter[0]
  CHECK(word(ins, 68) == 5);    // wait_counter[1]
  CHECK(word(ins, 96) == 1);    // wait_threshold[0]
  CHECK(word(ins, 100) == 3);   // wait_threshold[1]
  CHECK(word(ins, 128) == 2);   // out_counter
  CHECK(word(ins, 132) == 11);  // sm
  CHECK(word(ins, 136) == 0b111);  // params K, N_tile, n_off present; the unknown key is not
  CHECK(word(ins, 140) == 0);
  CHECK(word(ins, 144 + 4 * 0) == 16);          // K
  CHECK(word(ins, 144 + 4 * 1) == 32);          // N_tile
  CHECK(word(ins, 144 + 4 * 2) == 0xFFFFFFFDu);  // n_off = -3, two's complement
  for (std::size_t k = 3; k < abi::param_slots; ++k) CHECK(word(ins, 144 + 4 * k) == 0);
  CHECK(ins.params.get_int(abi::param_slot::n_off) == -3);
}

TEST_CASE("real params are IEEE floats in their slot; an integer for a real field is converted") {
  ir::task t;
  t.op = ir::opcode::rope;
  t.sm = 0;
  t.params.set(ir::param_key::head_dim, 64).set(ir::param_key::theta, 10000);  // theta given as an int
  t.params.set_real(ir::param_key::eps, 1e-06).set_real(ir::param_key::alpha, 0.125);
  abi::instruction ins = abi::marshal_task(t);
  CHECK(ins.params.slot[13] == 0x461C4000u);  // 10000.0f
  CHECK(ins.params.slot[5] == 0x358637BDu);   // 1e-06f
  CHECK(ins.params.slot[21] == 0x3E000000u);  // 0.125f
  CHECK(ins.params.slot[7] == 64u);
  CHECK(ins.param_present == ((1u << 7) | (1u << 13) | (1u << 5) | (1u << 21)));
  CHECK(ins.params.get_float(abi::param_slot::theta) == 10000.0f);
}

TEST_CASE("the loader refuses unassigned SMs and what the records cannot hold") {
  ir::task t = gemv_task();
  t.sm = ir::unassigned_sm;
  CHECK_THROWS_WITH_AS(abi::marshal_task(t), "task 7 (GEMV_TILE): sm is unassigned; the loader needs every task placed (sm >= 0)",
                       octo::error);
  CHECK(abi::marshal_task(t, /*require_sm=*/false).sm == -1);

  t = gemv_task();
  t.inputs.assign(9, 0);
  CHECK_THROWS_WITH_AS(abi::marshal_task(t), "task 7 (GEMV_TILE): 9 inputs, the ABI holds at most 8", octo::error);
  t = gemv_task();
  t.outputs.assign(5, 0);
  CHECK_THROWS_WITH_AS(abi::marshal_task(t), "task 7 (GEMV_TILE): 5 outputs, the ABI holds at most 4", octo::error);
  t = gemv_task();
  t.waits.assign(9, ir::wait{0, 1});
  CHECK_THROWS_WITH_AS(abi::marshal_task(t), "task 7 (GEMV_TILE): 9 waits, the ABI holds at most 8", octo::error);
  t = gemv_task();
  t.inputs = {0, 8, 8, 8, 8, 8, 8, 8};  // exactly at the cap is fine
  t.waits.assign(8, ir::wait{1, 1});
  CHECK(abi::marshal_task(t).n_waits == 8);

  t = gemv_task();
  t.inputs[1] = -1;
  CHECK_THROWS_WITH_AS(abi::marshal_task(t), "task 7 (GEMV_TILE): input buffer -1 is negative", octo::error);
  t = gemv_task();
  t.out_counter = -2;
  CHECK_THROWS_AS(abi::marshal_task(t), octo::error);
  t = gemv_task();
  t.waits[1].threshold = -1;
  CHECK_THROWS_AS(abi::marshal_task(t), octo::error);

  t = gemv_task();
  t.params.set(ir::param_key::K, std::int64_t{1} << 31);
  CHECK_THROWS_WITH_AS(abi::marshal_task(t), "task 7 (GEMV_TILE): param K = 2147483648 does not fit int32", octo::error);
  t = gemv_task();
  t.params.set_real(ir::param_key::K, 2.5);
  CHECK_THROWS_AS(abi::marshal_task(t), octo::error);
  t = gemv_task();
  t.params.set_real(ir::param_key::eps, 1e300);
  CHECK_THROWS_AS(abi::marshal_task(t), octo::error);
  t = gemv_task();
  t.params.set_real(ir::param_key::scale, std::numeric_limits<double>::quiet_NaN());
  CHECK_THROWS_AS(abi::marshal_task(t), octo::error);
}

TEST_CASE("a buffer becomes its record: row-major element strides, unused dims 1 / 0") {
  ir::buffer b{4, "k_cache", ir::buffer_kind::kv_cache, ir::dtype::f16, {2, 3, 4}, ir::mem_space::smem, {}};
  abi::buffer_record r = abi::marshal_buffer(b, 0x123456789ABCull);
  CHECK(r.address == 0x123456789ABCull);
  CHECK(r.numel == 24);
  CHECK(r.rank == 3);
  CHECK(r.dtype == 1);  // F16
  CHECK(r.space == 2);  // SMEM
  CHECK(r.reserved == 0);
  const std::uint32_t shape[] = {2, 3, 4, 1};
  const std::uint32_t stride[] = {12, 4, 1, 0};
  for (int i = 0; i < 4; ++i) {
    CHECK(r.shape[i] == shape[i]);
    CHECK(r.stride[i] == stride[i]);
  }
  auto cs = b.contiguous_strides();  // the IR's own definition of the ABI strides
  for (std::size_t i = 0; i < cs.size(); ++i) CHECK(std::int64_t(r.stride[i]) == cs[i]);
  // Address words as a GLSL uvec2 sees them: low word first.
  std::uint32_t words[2];
  std::memcpy(words, &r, 8);
  CHECK(words[0] == 0x56789ABCu);
  CHECK(words[1] == 0x1234u);

  ir::buffer scalar{0, "s", ir::buffer_kind::constant, ir::dtype::q4_k, {}, ir::mem_space::hbm, {}};
  abi::buffer_record s = abi::marshal_buffer(scalar, 0);
  CHECK(s.rank == 0);
  CHECK(s.numel == 1);
  CHECK(s.dtype == 17);  // Q4_K
  CHECK(s.shape[0] == 1);
  CHECK(s.stride[0] == 0);

  ir::buffer empty{1, "e", ir::buffer_kind::activation, ir::dtype::f32, {3, 0, 5}, ir::mem_space::hbm, {}};
  CHECK(abi::marshal_buffer(empty, 0).numel == 0);

  ir::buffer r5{2, "r5", ir::buffer_kind::activation, ir::dtype::f32, {1, 1, 1, 1, 1}, ir::mem_space::hbm, {}};
  CHECK_THROWS_WITH_AS(abi::marshal_buffer(r5, 0), "buffer 2 (r5): rank 5 exceeds the ABI's 4", octo::error);
  ir::buffer wide{3, "wide", ir::buffer_kind::weight, ir::dtype::f32, {std::int64_t{1} << 32}, ir::mem_space::hbm, {}};
  CHECK_THROWS_AS(abi::marshal_buffer(wide, 0), octo::error);
  ir::buffer tall{3, "tall", ir::buffer_kind::weight, ir::dtype::f32, {3, 65536, 65536}, ir::mem_space::hbm, {}};
  CHECK_THROWS_WITH_AS(abi::marshal_buffer(tall, 0), "buffer 3 (tall): stride of dim 0 does not fit 32 bits", octo::error);
  ir::buffer neg{3, "neg", ir::buffer_kind::weight, ir::dtype::f32, {-1}, ir::mem_space::hbm, {}};
  CHECK_THROWS_AS(abi::marshal_buffer(neg, 0), octo::error);
}
