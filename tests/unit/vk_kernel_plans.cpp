// The Vulkan planners against the compiled shaders, without a GPU: representative tasks of every opcode,
// weight dtype and kernel variant are planned; each launch's push constants (the fields push_builder
// packed: kind and offset) must equal the push-constant block its SPIR-V module declares, read from the
// module's words; every module named must be compiled, and every compiled module must be reached.
#include <doctest/doctest.h>

#include <spirv/unified1/spirv.hpp11>

#include <cmath>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "../../src/vulkan/kernel_registry.hpp"
#include "../../src/vulkan/spirv_registry.hpp"
#include "../../src/vulkan/vm_kernels.hpp"
#include "../support/single_task.hpp"
#include "octo/error.hpp"

using namespace octo;
using vm::vulkan::push_field;
using field_kind = push_field::kind;
using ir::dtype;
using ir::opcode;
using ir::param_key;
using octo::test::single_task;

namespace {

// ---- the block a module declares -----------------------------------------------------------------

/// The push-constant block of a SPIR-V module, flattened to scalar fields in offset order: 64-bit
/// addresses (uvec2, uint64_t, buffer references), 32-bit integers and floats; arrays and nested
/// structs are expanded. Empty when the module has no push constants. Throws on a type the planners
/// cannot pack.
std::vector<push_field> declared_push_fields(std::span<const std::uint32_t> words) {
  if (words.size() < 5 || words[0] != spv::MagicNumber) throw octo::error("not a SPIR-V module");
  struct type {
    spv::Op op{};
    std::vector<std::uint32_t> operands;  // the instruction's words after the result id
  };
  std::map<std::uint32_t, type> types;
  std::map<std::uint32_t, std::uint32_t> constants, strides;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> member_offsets;
  std::uint32_t block = 0;  // the struct behind the PushConstant variable
  for (std::size_t i = 5; i < words.size();) {
    const std::uint32_t count = words[i] >> 16;
    const auto op = static_cast<spv::Op>(words[i] & 0xffff);
    if (count == 0 || i + count > words.size()) throw octo::error("truncated SPIR-V instruction");
    const std::span<const std::uint32_t> w = words.subspan(i + 1, count - 1);
    switch (op) {
      case spv::Op::OpTypeInt: case spv::Op::OpTypeFloat: case spv::Op::OpTypeVector: case spv::Op::OpTypeArray:
      case spv::Op::OpTypeStruct: case spv::Op::OpTypePointer:
        types[w[0]] = {op, {w.begin() + 1, w.end()}};
        break;
      case spv::Op::OpConstant: constants[w[1]] = w[2]; break;
      case spv::Op::OpDecorate:
        if (static_cast<spv::Decoration>(w[1]) == spv::Decoration::ArrayStride) strides[w[0]] = w[2];
        break;
      case spv::Op::OpMemberDecorate:
        if (static_cast<spv::Decoration>(w[2]) == spv::Decoration::Offset) member_offsets[{w[0], w[1]}] = w[3];
        break;
      case spv::Op::OpVariable:
        if (static_cast<spv::StorageClass>(w[2]) == spv::StorageClass::PushConstant) {
          const auto& ptr = types.at(w[0]);  // OpTypePointer: storage class, pointee
          block = ptr.operands.at(1);
        }
        break;
      default: break;
    }
    i += count;
  }
  std::vector<push_field> fields;
  if (block == 0) return fields;
  auto flatten = [&](auto& self, std::uint32_t id, std::uint32_t offset) -> void {
    const auto& t = types.at(id);
    const auto& o = t.operands;
    switch (t.op) {
      case spv::Op::OpTypeInt:
        if (o.at(0) == 32) return fields.push_back({field_kind::u32, offset});
        if (o.at(0) == 64) return fields.push_back({field_kind::addr, offset});
        break;
      case spv::Op::OpTypeFloat:
        if (o.at(0) == 32) return fields.push_back({field_kind::f32, offset});
        break;
      case spv::Op::OpTypeVector:  // uvec2: an address as two words
        if (o.at(1) == 2 && types.at(o.at(0)).op == spv::Op::OpTypeInt && types.at(o.at(0)).operands.at(0) == 32)
          return fields.push_back({field_kind::addr, offset});
        break;
      case spv::Op::OpTypePointer:
        if (static_cast<spv::StorageClass>(o.at(0)) == spv::StorageClass::PhysicalStorageBuffer)
          return fields.push_back({field_kind::addr, offset});
        break;
      case spv::Op::OpTypeArray:
        for (std::uint32_t k = 0; k < constants.at(o.at(1)); ++k) self(self, o.at(0), offset + k * strides.at(id));
        return;
      case spv::Op::OpTypeStruct:
        for (std::uint32_t m = 0; m < o.size(); ++m) self(self, o[m], offset + member_offsets.at({id, m}));
        return;
      default: break;
    }
    throw octo::error("push-constant member of SPIR-V type op " + std::to_string(static_cast<int>(t.op)) +
                      " is none a planner packs");
  };
  flatten(flatten, block, 0);
  return fields;
}

std::string field_text(const push_field& f) {
  const char* k = f.type == field_kind::addr ? "addr" : f.type == field_kind::u32 ? "u32" : "f32";
  return std::string(k) + " at " + std::to_string(f.offset);
}

/// Empty when the planner's fields are the module's; otherwise the first difference.
std::string push_mismatch(const std::vector<push_field>& declared, const std::vector<push_field>& packed) {
  for (std::size_t i = 0; i < std::max(declared.size(), packed.size()); ++i) {
    if (i < declared.size() && i < packed.size() && declared[i] == packed[i]) continue;
    return "field " + std::to_string(i) + ": the module declares " +
           (i < declared.size() ? field_text(declared[i]) : std::string("nothing")) + ", the planner packs " +
           (i < packed.size() ? field_text(packed[i]) : std::string("nothing"));
  }
  return {};
}

// ---- representative tasks ------------------------------------------------------------------------

vm::vulkan::device_facts device(bool subgroups) {
  vm::vulkan::device_facts d;
  d.subgroup_size = 32;
  d.subgroup_arithmetic = subgroups;
  d.subgroup_shuffle = subgroups;
  d.cooperative_matrix_nv = subgroups;
  d.max_workgroup_size_x = 1024;
  d.max_shared_memory = 49152;
  return d;
}

/// Appends a task of one output with its own counter, labelled by its opcode.
void add_one_output_task(ir::program& prog, opcode op, std::vector<std::int32_t> in, std::int32_t out, ir::param_list p) {
  ir::task t;
  t.op = op;
  t.inputs = std::move(in);
  t.outputs = {out};
  t.out_counter = prog.add_counter("c" + std::to_string(prog.tasks.size()));
  t.params = std::move(p);
  t.label = std::string(ir::name(op));
  prog.add_task(std::move(t));
}

// The planners' environment knobs, cleared so that each case picks its kernel from the task and device.
void clear_kernel_environment() {
  for (const char* v : {"OCTO_KERNELS_NO_SUBGROUP", "OCTO_KERNELS_NO_GEMM", "OCTO_GEMM_KERNEL", "OCTO_GEMM_TILE",
                        "OCTO_KERNELS_NO_COOPMAT", "OCTO_GEMV_NR", "OCTO_GEMV_WG", "OCTO_GEMV_XS", "OCTO_GEMV_IDOT", "OCTO_GEMV_NR_LONG", "OCTO_GEMV_NR_WIDE", "OCTO_GEMV_NR_NARROW", "OCTO_GEMV_NR_SWIGLU", "OCTO_GEMV_NR_ROUND", "OCTO_GEMV_WG_ROUND",
                        "OCTO_GEMV_X8", "OCTO_GEMV_X8_WRITER", "OCTO_GEMV_QKV", "OCTO_GEMV_SWIGLU_ROUND", "OCTO_GEMV_WG_SWIGLU", "OCTO_GEMV_HALVES",
                        "OCTO_ATTENTION", "OCTO_ATTENTION_CHUNKS", "OCTO_ATTENTION_KEYS", "OCTO_ATTENTION_SUBGROUPS", "OCTO_ATTENTION_SWITCH", "OCTO_ATTENTION_WG", "OCTO_ATTENTION_WIDE_KEYS",
                        "OCTO_ATTENTION_PREFILL", "OCTO_ATTENTION_ROWS", "OCTO_ATTENTION_PREFETCH", "OCTO_ATTENTION_SPLIT", "OCTO_ATTENTION_REGS", "OCTO_GEMM_EPI_REGS", "OCTO_ATTENTION_LONG", "OCTO_ATTENTION_LONG_KEYS", "OCTO_ATTENTION_PIPE", "OCTO_ATTENTION_MERGE_BATCH", "OCTO_GEMM_COOP", "OCTO_GEMM_BK", "OCTO_GEMM_MIN_GROUPS", "OCTO_GEMM_X16", "OCTO_GEMM_NORM_AHEAD", "OCTO_GEMM_DEEP", "OCTO_GEMM_DEQUANT", "OCTO_GEMM_SPLITK", "OCTO_GEMM_NARROW", "OCTO_GEMV_PLAN", "OCTO_ARGMAX_SPLIT", "OCTO_GEMV_WG_NARROW", "OCTO_GEMV_WG_WIDE", "OCTO_GEMV_NR_WIDE16"})
    ::unsetenv(v);
}

struct plans {
  std::set<std::string, std::less<>> reached;
  std::vector<std::string> mismatches;

  void check(const vm::vulkan::kernel_launch& l, const std::string& what) {
    for (const auto& b : l.before) check(b, what + " (before " + std::string(l.shader) + ")");
    for (const auto& b : l.beside) check(b, what + " (beside " + std::string(l.shader) + ")");
    if (l.shader.empty()) return;
    reached.insert(std::string(l.shader));
    const auto words = vm::vulkan::find_spirv(l.shader);
    if (words.empty()) return mismatches.push_back(what + ": module '" + std::string(l.shader) + "' is not compiled");
    const auto m = push_mismatch(declared_push_fields(words), l.push_constants.fields);
    if (!m.empty()) mismatches.push_back(what + " (" + std::string(l.shader) + "): " + m);
  }

  void plan(const ir::program& p, const vm::vulkan::device_facts& d, bool fast_precision = false,
            std::uint64_t shared_scratch = 0, std::uint64_t own_scratch = 0, std::uint64_t transient_scratch = 0) {
    std::vector<std::uint64_t> addresses(p.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000 * (b + 1);
    const auto& t = p.tasks.at(0);
    const auto& row = vm::vulkan::kernel_for(t.op);
    const bool has_planner = row.planner != nullptr;
    REQUIRE_MESSAGE(has_planner, ir::name(t.op) << " has no planner: " << row.no_kernel);
    vm::vulkan::task_context c{p, t, addresses, 0xf0000, d, fast_precision};
    c.shared_scratch_address = shared_scratch;
    c.scratch_address = own_scratch;
    c.transient_scratch_address = transient_scratch;
    check(row.planner(c), t.label.str() + (d.subgroup_arithmetic ? "" : " without subgroups"));
  }
};

constexpr dtype weight_dtypes[] = {dtype::f32,  dtype::f16,  dtype::bf16, dtype::q8_0, dtype::q4_0,
                                   dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q2_k, dtype::q3_k,
                                   dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs};

ir::program matmul(opcode op, dtype w, std::int64_t rows) {
  ir::param_list p;
  p.set(param_key::K, 256).set(param_key::N_tile, 64).set(param_key::n_off, 0);
  if (op == opcode::gemm_tile) p.set(param_key::M_tile, rows);
  auto prog = single_task(op, {{"x", {rows, 256}}, {"w", {64, 256}, w, ir::buffer_kind::weight}}, {"y", {rows, 64}}, p);
  prog.tasks[0].label = std::string(ir::name(op)) + " " + std::string(ir::name(w));
  return prog;
}

ir::program attention(std::int64_t T, bool partial) {
  ir::param_list p;
  p.set(param_key::head_dim, 32).set(param_key::kv_start, 0).set(param_key::kv_len, 8).set_real(param_key::scale, 0.17);
  p.set(param_key::n_heads, 2).set(param_key::n_kv_heads, 2).set(param_key::partial, partial ? 1 : 0);
  return single_task(opcode::attention_tile,
                     {{"q", {T, 64}}, {"k", {8, 64}, dtype::f16, ir::buffer_kind::kv_cache},
                      {"v", {8, 64}, dtype::f16, ir::buffer_kind::kv_cache}},
                     {"o", partial ? std::vector<std::int64_t>{T, 2, 34} : std::vector<std::int64_t>{T, 64}}, p);
}

/// Every opcode with a planner, once per family variant that depends on the task (not on the device).
std::vector<ir::program> task_variants() {
  std::vector<ir::program> v;
  ir::param_list none;
  const std::vector<std::int64_t> row{2, 64};
  for (opcode op : {opcode::copy, opcode::gelu}) v.push_back(single_task(op, {{"x", row}}, {"y", row}, none));
  for (opcode op : {opcode::add, opcode::mul, opcode::silu_mul})
    v.push_back(single_task(op, {{"a", row}, {"b", row}}, {"y", row}, none));
  v.push_back(single_task(opcode::mul, {{"a", row}}, {"y", row}, ir::param_list{}.set_real(param_key::alpha, 0.5)));
  v.push_back(single_task(opcode::allreduce_shard, {{"a", row}, {"b", row}, {"c", row}}, {"y", row}, none));
  v.push_back(single_task(opcode::embed, {{"ids", {2}, dtype::i32}, {"table", {100, 64}, dtype::f16, ir::buffer_kind::weight}},
                          {"y", row}, ir::param_list{}.set(param_key::hidden, 64)));
  ir::param_list norm;
  norm.set_real(param_key::eps, 1e-6).set(param_key::hidden, 64);
  v.push_back(single_task(opcode::rmsnorm, {{"x", row}, {"w", {64}}}, {"y", row}, norm));
  v.push_back(single_task(opcode::layernorm, {{"x", row}, {"w", {64}}, {"b", {64}}}, {"y", row}, norm));
  for (dtype w : weight_dtypes) {
    v.push_back(matmul(opcode::gemv_tile, w, 1));
    v.push_back(matmul(opcode::gemm_tile, w, 32));
  }
  v.push_back(attention(1, false));
  v.push_back(attention(1, true));
  v.push_back(attention(16, false));
  v.push_back(single_task(opcode::rope, {{"x", row}, {"pos", {2}, dtype::i32}}, {"y", row},
                          ir::param_list{}.set(param_key::head_dim, 32).set_real(param_key::theta, 1e4)));
  v.push_back(single_task(opcode::dequant, {{"q", {64}, dtype::i8}, {"scales", {2}}}, {"y", {64}},
                          ir::param_list{}.set(param_key::qdtype, std::int64_t(dtype::i8)).set(param_key::group, 32)));
  v.push_back(single_task(opcode::softmax, {{"x", row}}, {"y", row}, ir::param_list{}.set(param_key::dim, 64)));
  v.push_back(single_task(opcode::sample_argmax, {{"logits", {1, 100}}}, {"ids", {1}, dtype::i32}, none));
  v.push_back(single_task(opcode::sample_argmax, {{"logits", {1, 151936}}}, {"ids", {1}, dtype::i32}, none));
  v.push_back(single_task(opcode::attention_combine, {{"p0", {1, 2, 34}}, {"p1", {1, 2, 34}}}, {"o", {1, 64}}, none));
  // KV_APPEND writes the cache it reads (input 1 is the output).
  auto kv = single_task(opcode::kv_append, {{"kv_new", {1, 64}}, {"cache", {8, 64}, dtype::f16, ir::buffer_kind::kv_cache}},
                        {"unused", {1}}, ir::param_list{}.set(param_key::pos, 3));
  kv.tasks[0].outputs[0] = kv.tasks[0].inputs[1];
  v.push_back(kv);
  // The fused ops (gemv.comp's FUSE modes and norm_rope.comp), every weight dtype for the GEMV ones.
  const auto fused_params = [] {
    ir::param_list p;
    p.set(param_key::K, 256).set(param_key::hidden, 256).set_real(param_key::eps, 1e-6);
    return p;
  };
  for (dtype w : weight_dtypes) {
    const auto name = std::string(ir::name(w));
    const octo::test::tensor_spec x{"x", {1, 256}}, nw{"norm_w", {256}, dtype::f32, ir::buffer_kind::weight},
        wt{"w", {64, 256}, w, ir::buffer_kind::weight}, w2{"w_up", {64, 256}, w, ir::buffer_kind::weight},
        pos{"pos", {1}, dtype::i32};
    auto tile = fused_params();
    tile.set(param_key::N_tile, 64).set(param_key::n_off, 0);
    auto a = single_task(opcode::rmsnorm_gemv, {x, nw, wt}, {"y", {1, 64}}, tile);
    a.tasks[0].label = "RMSNORM_GEMV " + name;
    v.push_back(a);
    auto b = single_task(opcode::gemv_add, {x, wt, {"r", {1, 64}}}, {"y", {1, 64}},
                         ir::param_list{}.set(param_key::K, 256).set(param_key::N_tile, 64).set(param_key::n_off, 0));
    b.tasks[0].label = "GEMV_ADD " + name;
    v.push_back(b);
    auto sw = single_task(opcode::rmsnorm_swiglu, {x, nw, wt, w2}, {"y", {1, 64}}, tile);
    sw.tasks[0].label = "RMSNORM_SWIGLU " + name;
    v.push_back(sw);
    auto rope = fused_params();
    rope.set(param_key::head_dim, 32).set(param_key::n_rot, 32).set_real(param_key::theta, 1e4);
    auto q = single_task(opcode::rmsnorm_gemv_rope, {x, nw, wt, pos}, {"y", {1, 64}}, rope);
    q.tasks[0].label = "RMSNORM_GEMV_ROPE " + name;
    v.push_back(q);
    rope.set(param_key::pos, 3);
    auto k = single_task(opcode::rmsnorm_gemv_kv, {x, nw, wt, {"cache", {8, 64}, dtype::f16, ir::buffer_kind::kv_cache}, pos},
                         {"unused", {1}}, rope);
    k.tasks[0].outputs[0] = k.tasks[0].inputs[3];
    k.tasks[0].label = "RMSNORM_GEMV_KV " + name;
    v.push_back(k);
    const octo::test::tensor_spec hw{"head_w", {32}, dtype::f32, ir::buffer_kind::weight};
    rope.set(param_key::pos, 0);
    auto qn = single_task(opcode::rmsnorm_gemv_norm_rope, {x, nw, wt, hw, pos}, {"y", {1, 64}}, rope);
    qn.tasks[0].label = "RMSNORM_GEMV_NORM_ROPE " + name;
    v.push_back(qn);
    rope.set(param_key::pos, 3);
    auto kn = single_task(opcode::rmsnorm_gemv_norm_kv,
                          {x, nw, wt, hw, {"cache", {8, 64}, dtype::f16, ir::buffer_kind::kv_cache}, pos}, {"unused", {1}}, rope);
    kn.tasks[0].outputs[0] = kn.tasks[0].inputs[4];
    kn.tasks[0].label = "RMSNORM_GEMV_NORM_KV " + name;
    v.push_back(kn);
    for (bool biased : {false, true}) {
      auto qkv = octo::test::qkv_task(w, dtype::f16, biased, 256, 64, 32, 8, rope);
      qkv.tasks[0].label = "RMSNORM_GEMV_QKV " + name + (biased ? " biased" : "");
      v.push_back(qkv);
    }
  }
  ir::param_list head;
  head.set(param_key::hidden, 32).set_real(param_key::eps, 1e-6).set(param_key::head_dim, 32).set(param_key::n_rot, 32);
  head.set_real(param_key::theta, 1e4);
  v.push_back(single_task(opcode::rmsnorm_rope, {{"x", row}, {"norm_w", {32}}, {"pos", {2}, dtype::i32}}, {"y", row}, head));
  head.set(param_key::pos, 3);
  auto hk = single_task(opcode::rmsnorm_rope_kv,
                        {{"x", row}, {"norm_w", {32}}, {"cache", {8, 64}, dtype::f16, ir::buffer_kind::kv_cache},
                         {"pos", {2}, dtype::i32}},
                        {"unused", {1}}, head);
  hk.tasks[0].outputs[0] = hk.tasks[0].inputs[2];
  v.push_back(hk);
  return v;
}

}  // namespace

TEST_CASE("push_mismatch reads a module's block and names the first field a planner packs differently") {
  // eltwise declares uvec2 in_addr[8], uvec2 out_addr, six uints, float alpha (shaders/eltwise.comp).
  const auto declared = declared_push_fields(vm::vulkan::find_spirv("eltwise"));
  REQUIRE(declared.size() == 16);
  CHECK(declared[8] == push_field{field_kind::addr, 64});
  CHECK(declared[15] == push_field{field_kind::f32, 96});
  vm::vulkan::push_builder right, wrong_kind, short_by_one;
  for (int i = 0; i < 9; ++i) right.addr(0), wrong_kind.addr(0), short_by_one.addr(0);
  for (int i = 0; i < 6; ++i) right.u32(0), wrong_kind.u32(0), short_by_one.u32(0);
  right.f32(1.0f);
  wrong_kind.u32(1);  // alpha packed as an integer
  CHECK(push_mismatch(declared, right.take().fields).empty());
  CHECK(push_mismatch(declared, wrong_kind.take().fields) == "field 15: the module declares f32 at 96, the planner packs u32 at 96");
  CHECK(push_mismatch(declared, short_by_one.take().fields) == "field 15: the module declares f32 at 96, the planner packs nothing");
  CHECK_THROWS_AS(declared_push_fields(std::vector<std::uint32_t>{1, 2, 3, 4, 5}), octo::error);
}

TEST_CASE("every planned launch packs its module's push-constant block, and every compiled module is reached") {
  clear_kernel_environment();
  plans p;
  for (const auto& prog : task_variants())
    for (bool subgroups : {true, false}) p.plan(prog, device(subgroups));
  // The Q|K|V task's one launch over every format (the 256-element ones take three by default).
  ::setenv("OCTO_GEMV_QKV", "1", 1);
  // Decode attention's flash-decoding kernel is opt-in (OCTO_ATTENTION=flash): the same tasks again with it.
  ::setenv("OCTO_ATTENTION", "flash", 1);
  for (const auto& prog : task_variants()) p.plan(prog, device(true));
  ::unsetenv("OCTO_ATTENTION");
  // The tiled GEMMs: each kernel forced in turn, and the `fast` default (cooperative matrices, f16 factors).
  for (const char* kernel : {"old", "reg", "coop", "coopf"}) {
    ::setenv("OCTO_GEMM_KERNEL", kernel, 1);
    for (dtype w : weight_dtypes) p.plan(matmul(opcode::gemm_tile, w, 32), device(true));
  }
  ::unsetenv("OCTO_GEMM_KERNEL");
  for (dtype w : weight_dtypes) p.plan(matmul(opcode::gemm_tile, w, 32), device(true), /*fast_precision=*/true);
  // Prefill sizes: a quantized weight dequantized once to f16 (weights_f16_<dt>) for gemm_coopf_f16.
  for (dtype w : weight_dtypes) p.plan(matmul(opcode::gemm_tile, w, 512), device(true), true, 0x900000);
  // A small grid over long rows: each tile's K split over workgroups (gemm_coopf_f16_ksplit).
  {
    ir::param_list pk;
    pk.set(param_key::K, 8960).set(param_key::N_tile, 1536).set(param_key::n_off, 0).set(param_key::M_tile, 512);
    p.plan(single_task(opcode::gemm_tile, {{"x", {512, 8960}}, {"w", {1536, 8960}, dtype::f16, ir::buffer_kind::weight}},
                       {"y", {512, 1536}}, pk),
           device(true), true, 0x900000, 0xa00000, 0xb00000);
  }
  // An RMSNORM_GEMV's norm ahead of the GEMM as f16 rows (norm_f16; plan_norm_x).
  {
    ir::param_list pn;
    pn.set(param_key::K, 256).set(param_key::N_tile, 64).set(param_key::n_off, 0).set(param_key::hidden, 256);
    pn.set_real(param_key::eps, 1e-6);
    p.plan(single_task(opcode::rmsnorm_gemv,
                       {{"x", {512, 256}}, {"norm_w", {256}}, {"w", {64, 256}, dtype::f16, ir::buffer_kind::weight}},
                       {"y", {512, 64}}, pn),
           device(true), true, 0x900000);
  }
  // Prefill attention at the `fast` precision on tensor cores (attention_coop), its softmax in registers
  // where the VM's probe found NVIDIA's fragment layout.
  p.plan(attention(16, false), device(true), /*fast_precision=*/true);
  auto mma_device = device(true);
  mma_device.coop_mma_layout = true;
  ::setenv("OCTO_ATTENTION_REGS", "1", 1);
  p.plan(attention(16, false), mma_device, /*fast_precision=*/true);
  ::unsetenv("OCTO_ATTENTION_REGS");
  // Decode GEMVs on integer dot products (gemv_idot_<dt>): the `fast` precision on a device that
  // accelerates them.
  auto idot_device = device(true);
  idot_device.int_dot = idot_device.int_dot_accelerated = true;
  for (dtype w : weight_dtypes) p.plan(matmul(opcode::gemv_tile, w, 1), idot_device, /*fast_precision=*/true);
  for (dtype w : {dtype::q2_k, dtype::q3_k}) {  // their integer loops run on wide outputs only
    ir::param_list wide;
    wide.set(param_key::K, 256).set(param_key::N_tile, 8192).set(param_key::n_off, 0);
    p.plan(single_task(opcode::gemv_tile, {{"x", {1, 256}}, {"w", {8192, 256}, w, ir::buffer_kind::weight}}, {"y", {1, 8192}}, wide),
           idot_device, true);
  }
  // ... and on every output with OCTO_GEMV_IDOT=1: the Q|K|V task's.
  ::setenv("OCTO_GEMV_IDOT", "1", 1);
  for (dtype w : {dtype::q2_k, dtype::q3_k}) {
    ir::param_list rope;
    rope.set(param_key::K, 256).set(param_key::hidden, 256).set_real(param_key::eps, 1e-6);
    rope.set(param_key::head_dim, 32).set(param_key::n_rot, 32).set_real(param_key::theta, 1e4).set(param_key::pos, 3);
    auto qkv = octo::test::qkv_task(w, dtype::f16, true, 256, 64, 32, 8, rope);
    qkv.tasks[0].label = "RMSNORM_GEMV_QKV " + std::string(ir::name(w)) + " (OCTO_GEMV_IDOT=1)";
    p.plan(qkv, idot_device, true);
  }
  ::unsetenv("OCTO_GEMV_IDOT");
  // x rounded once ahead of them (OCTO_GEMV_X8, gemv_quantize_x as their `before`), plain and fused.
  ::setenv("OCTO_GEMV_X8", "2", 1);
  for (const auto& prog : task_variants())
    for (opcode op : {opcode::gemv_tile, opcode::gemv_add, opcode::rmsnorm_gemv, opcode::rmsnorm_swiglu,
                      opcode::rmsnorm_gemv_rope, opcode::rmsnorm_gemv_kv, opcode::rmsnorm_gemv_qkv})
      if (prog.tasks.at(0).op == op) p.plan(prog, idot_device, true, 0x900000);
  ::unsetenv("OCTO_GEMV_X8");
  // The VM's own kernels.
  p.check(vm::vulkan::plan_vm_regulator(0x1000, 0x2000, 0x3000, 64, 0, 2, true, 1.0f, device(true)), "vm_regulator");
  p.check(vm::vulkan::plan_vm_message(0x1000, 0x2000, 0x3000, 64, 1), "vm_message");
  p.check(vm::vulkan::plan_vm_keep_awake(0x1000, 1u << 20), "vm_keep_awake");
  p.check(vm::vulkan::plan_vm_token_loop(0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 4), "vm_token_loop");
  p.check(vm::vulkan::plan_vm_observe(0x1000, 0x2000, 0x3000, 0x4000, 24, 256, vm::vulkan::observe_chunks(512 * 3584), device(true)),
          "vm_observe");
  p.check(vm::vulkan::plan_vm_dispatch_size(0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 3), "vm_dispatch_size");
  p.check(vm::vulkan::plan_vm_copy(0x1000, 0x2000, 896), "vm_copy");
  p.check(vm::vulkan::plan_vm_coop_layout(0x1000), "vm_coop_layout");

  ::unsetenv("OCTO_GEMV_QKV");
  for (const auto& m : p.mismatches) FAIL_CHECK(m);
  for (auto name : vm::vulkan::spirv_names())
    CHECK_MESSAGE(p.reached.count(name) == 1, "compiled module '" << std::string(name) << "' is reached by no planned task");
}

TEST_CASE("indirect group counts: the rule's arithmetic (what shaders/vm_dispatch_size.comp computes)") {
  vm::vulkan::indirect_groups r;
  r.add = 1;
  r.limit = 1000;
  r.div = 256;
  r.min = 1;
  r.max = 4;
  r.mul = 2;
  CHECK(r.groups_at(0, 1) == 2);      // one key: one chunk a head
  CHECK(r.groups_at(254, 1) == 2);    // 255 keys
  CHECK(r.groups_at(255, 1) == 2);    // 256 keys: still one chunk
  CHECK(r.groups_at(256, 1) == 4);    // 257: two
  CHECK(r.groups_at(767, 1) == 6);    // 768: three
  CHECK(r.groups_at(768, 1) == 8);    // 769: four, the cap
  CHECK(r.groups_at(999, 1) == 8);    // limit 1000 keys: four
  CHECK(r.groups_at(0xfffffff0u, 1) == 8);  // past the limit: clamped before the division
  r.add = -10;  // the keys start past the pass's end at position 0: none until position 10
  CHECK(r.groups_at(0, 1) == 2);      // min 1 chunk (the kernel writes zeros)
  CHECK(r.groups_at(266, 1) == 2);    // 256 keys
  CHECK(r.groups_at(267, 1) == 4);
  r.add = 0;
  r.tokens = true;  // pos + n_tokens
  CHECK(r.groups_at(250, 6) == 2);
  CHECK(r.groups_at(250, 7) == 4);
}

namespace {

/// The plan of a program's one task on a subgroup device with cooperative matrices, each buffer at its
/// own address; `fast_precision`: the `fast` precision.
vm::vulkan::kernel_launch plan_on_subgroup_device(const ir::program& prog, bool fast_precision,
                                                  std::uint64_t shared_scratch = 0, std::uint64_t own_scratch = 0,
                                                  std::uint64_t transient_scratch = 0) {
  std::vector<std::uint64_t> addresses(prog.buffers.size());
  for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000 * (b + 1);
  const auto d = device(true);
  vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, d, fast_precision};
  c.shared_scratch_address = shared_scratch;
  c.scratch_address = own_scratch;
  c.transient_scratch_address = transient_scratch;
  return vm::vulkan::kernel_for(prog.tasks.at(0).op).planner(c);
}

/// The plan of one decode row of attention (kv_len 1 at position 0, causal, q_pos 0: keys = pos + 1)
/// over F16 caches of `slots` rows, as the planner makes it on a subgroup device.
vm::vulkan::kernel_launch plan_decode_attention(std::int64_t slots, std::int64_t heads, std::int64_t kv_heads,
                                                std::int64_t hd) {
  ir::param_list p;
  p.set(param_key::head_dim, hd).set(param_key::kv_start, 0).set(param_key::kv_len, 1).set_real(param_key::scale, 0.125);
  p.set(param_key::n_heads, heads).set(param_key::n_kv_heads, kv_heads).set(param_key::causal, 1).set(param_key::q_pos, 0);
  const auto prog = single_task(opcode::attention_tile,
                                {{"q", {1, heads * hd}}, {"k", {slots, kv_heads * hd}, dtype::f16, ir::buffer_kind::kv_cache},
                                 {"v", {slots, kv_heads * hd}, dtype::f16, ir::buffer_kind::kv_cache}},
                                {"o", {1, heads * hd}}, p);
  return plan_on_subgroup_device(prog, false);
}

}  // namespace

TEST_CASE("decode attention by default: split-key up to the switch, flash-decoding past it, both recorded") {
  clear_kernel_environment();
  const auto l = plan_decode_attention(4500, 14, 2, 64);
  CHECK(l.shader == "attention_decode");
  REQUIRE(l.indirect.has_value());
  REQUIRE(l.alternatives.size() == 1);
  const auto& split = l.alternatives[0];
  CHECK(split.shader == "attention");
  REQUIRE(split.indirect.has_value());
  // keys = pos + 1: exactly one of the two runs at every position, split-key up to 128 keys.
  for (std::uint32_t pos : {0u, 1u, 126u, 127u, 128u, 2048u, 4499u}) {
    CAPTURE(pos);
    const bool short_context = pos + 1 <= 128;
    CHECK((l.indirect->groups_at(pos, 1) == 0) == short_context);
    CHECK(split.indirect->groups_at(pos, 1) == (short_context ? split.groups[0] : 0u));
  }
  // The 1.5B's shape over 16k slots: split-key up to 128 keys, 256-invocation flash-decoding up to 8192
  // (single passes), the 128-invocation kernel past them; exactly one of the three runs at every position.
  const auto lw = plan_decode_attention(16384, 12, 2, 128);
  REQUIRE(lw.indirect.has_value());
  CHECK(lw.spec_constants.at(0) == 256);
  REQUIRE(lw.alternatives.size() == 2);
  const auto& narrow = lw.alternatives[1];
  CHECK(narrow.shader == "attention_decode");
  CHECK(narrow.spec_constants.at(0) == 128);
  CHECK(narrow.scratch_bytes <= lw.scratch_bytes);  // one scratch (the main launch's): its layout fits
  REQUIRE(narrow.indirect.has_value());
  for (std::uint32_t pos : {0u, 127u, 128u, 4000u, 8190u, 8191u, 8192u, 16383u}) {
    CAPTURE(pos);
    const std::uint32_t keys = pos + 1;
    CHECK((lw.alternatives[0].indirect->groups_at(pos, 1) > 0) == (keys <= 128));
    CHECK((lw.indirect->groups_at(pos, 1) > 0) == (keys > 128 && keys <= 8192));
    CHECK((narrow.indirect->groups_at(pos, 1) > 0) == (keys > 8192));
  }
  // Past 8192 keys the long form: at most 64 chunks (several passes each, pipelined), merges of 16
  // chunks a round trip; the shorter ranges keep 128 single-pass chunks, merges of 8, no pipelining.
  CHECK(narrow.spec_constants.at(6) == 64u);
  CHECK(narrow.spec_constants.at(7) == 16u);
  CHECK(narrow.spec_constants.at(8) == 1u);
  CHECK(narrow.indirect->groups_at(16383, 1) == 2u * 64u);  // 2 KV heads x 64 chunks of 256 keys
  CHECK(lw.spec_constants.at(6) == 128u);
  CHECK(lw.spec_constants.at(7) == 8u);
  CHECK(lw.spec_constants.at(8) == 0u);
  CHECK(plan_decode_attention(8192, 12, 2, 128).alternatives.size() == 1);  // never past 8192 keys
  // The 0.5B's shape (128 invocations at every context) gets the long form as a range of its own.
  const auto l05 = plan_decode_attention(32768, 14, 2, 64);
  REQUIRE(l05.alternatives.size() == 2);
  const auto& far = l05.alternatives[1];
  CHECK(far.shader == "attention_decode");
  CHECK(far.spec_constants.at(0) == 128u);
  CHECK(far.spec_constants.at(6) == 64u);
  CHECK(far.spec_constants.at(8) == 1u);
  CHECK(far.scratch_bytes <= l05.scratch_bytes);
  for (std::uint32_t pos : {127u, 128u, 8191u, 8192u, 32767u}) {
    CAPTURE(pos);
    const std::uint32_t keys = pos + 1;
    CHECK((l05.indirect->groups_at(pos, 1) > 0) == (keys > 128 && keys <= 8192));
    CHECK((far.indirect->groups_at(pos, 1) > 0) == (keys > 8192));
  }
  ::setenv("OCTO_ATTENTION_LONG", "0", 1);  // the short form everywhere: one flash range again
  CHECK(plan_decode_attention(32768, 14, 2, 64).alternatives.size() == 1);
  CHECK(plan_decode_attention(16384, 12, 2, 128).alternatives.at(1).spec_constants.at(6) == 128u);
  ::setenv("OCTO_ATTENTION_LONG", "yes", 1);
  CHECK_THROWS_WITH_AS(plan_decode_attention(32768, 14, 2, 64), doctest::Contains("OCTO_ATTENTION_LONG"), octo::error);
  ::unsetenv("OCTO_ATTENTION_LONG");
  ::setenv("OCTO_ATTENTION_PIPE", "2", 1);
  CHECK_THROWS_WITH_AS(plan_decode_attention(32768, 14, 2, 64), doctest::Contains("OCTO_ATTENTION_PIPE"), octo::error);
  ::setenv("OCTO_ATTENTION_PIPE", "1", 1);  // forced on the short form too
  CHECK(plan_decode_attention(4500, 14, 2, 64).spec_constants.at(8) == 1u);
  ::unsetenv("OCTO_ATTENTION_PIPE");
  ::setenv("OCTO_ATTENTION_MERGE_BATCH", "12", 1);
  CHECK_THROWS_WITH_AS(plan_decode_attention(4500, 14, 2, 64),
                       doctest::Contains("OCTO_ATTENTION_MERGE_BATCH='12' is not 8 or 16"), octo::error);
  ::unsetenv("OCTO_ATTENTION_MERGE_BATCH");
  ::setenv("OCTO_ATTENTION_KEYS", "48", 1);
  CHECK_THROWS_WITH_AS(plan_decode_attention(4500, 14, 2, 64),
                       doctest::Contains("OCTO_ATTENTION_KEYS='48' is not 32, 64 or 128"), octo::error);
  ::setenv("OCTO_ATTENTION_KEYS", "128", 1);
  CHECK(plan_decode_attention(4500, 14, 2, 64).spec_constants.at(2) == 128u);
  ::unsetenv("OCTO_ATTENTION_KEYS");
  // A cache of at most 128 slots never reaches flash-decoding's range: split-key alone, no gate.
  const auto ls = plan_decode_attention(128, 14, 2, 64);
  CHECK(ls.shader == "attention");
  CHECK(ls.alternatives.empty());
  CHECK_FALSE(ls.indirect.has_value());
  // The 7B shape (GQA 7, head_dim 128) takes flash-decoding too, in workgroups of 256 (its 224 four-dim
  // outputs: one an invocation), the 0.5B's (112 outputs) in 128; head_dim 80 (its 4-dim units do not
  // tile the workgroup) and GQA groups above 16 (the softmax's 16 lanes a head) keep the split-key kernel.
  const auto l7b = plan_decode_attention(4500, 28, 4, 128);
  CHECK(l7b.shader == "attention_decode");
  CHECK(l7b.spec_constants.at(0) == 256);
  CHECK(plan_decode_attention(4500, 14, 2, 64).spec_constants.at(0) == 128);
  CHECK(plan_decode_attention(4500, 16, 2, 256).shader == "attention_decode");  // GQA 8, head_dim 256: the largest
  const auto l80 = plan_decode_attention(4500, 4, 4, 80);
  CHECK(l80.shader == "attention");
  CHECK(l80.alternatives.empty());
  CHECK(plan_decode_attention(4500, 18, 2, 64).shader == "attention_decode");  // GQA 9: 256 invocations
  CHECK(plan_decode_attention(4500, 34, 2, 64).shader == "attention");         // GQA 17
  ::setenv("OCTO_ATTENTION_WG", "128", 1);
  CHECK(plan_decode_attention(4500, 28, 4, 128).spec_constants.at(0) == 128);
  CHECK(plan_decode_attention(4500, 18, 2, 64).shader == "attention");  // GQA 9 does not fit 128 invocations
  ::setenv("OCTO_ATTENTION_WG", "64", 1);
  CHECK_THROWS_WITH_AS(plan_decode_attention(4500, 14, 2, 64), doctest::Contains("OCTO_ATTENTION_WG"), octo::error);
  ::unsetenv("OCTO_ATTENTION_WG");
  ::setenv("OCTO_ATTENTION", "bogus", 1);
  CHECK_THROWS_WITH_AS(plan_decode_attention(4500, 14, 2, 64), doctest::Contains("OCTO_ATTENTION"), octo::error);
  ::unsetenv("OCTO_ATTENTION");
}

TEST_CASE("flash decode attention sizes its chunks from the position (an indirect launch)") {
  clear_kernel_environment();
  ::setenv("OCTO_ATTENTION", "flash", 1);
  // keys = pos + 1 of the 4500-slot cache; 2 KV heads.
  const auto l = plan_decode_attention(4500, 14, 2, 64);
  ::unsetenv("OCTO_ATTENTION");
  CHECK(l.shader == "attention_decode");
  REQUIRE(l.indirect.has_value());
  const auto& r = *l.indirect;
  CHECK(l.groups[0] == 2 * 72);                   // ceil(4500 / 64) = 71 chunks a head at most, made even
  CHECK(r.mul * r.max == l.groups[0]);
  CHECK(r.groups_at(0, 1) == 2);                  // one key
  CHECK(r.groups_at(63, 1) == 2);                 // 64 keys: one chunk
  CHECK(r.groups_at(64, 1) == 4);                 // 65
  CHECK(r.groups_at(4499, 1) == 142);             // the full cache: 71 chunks
  CHECK(r.groups_at(100000, 1) == 142);           // never past the cache
}

TEST_CASE("SAMPLE_ARGMAX over vocabulary rows: parts of 8192 logits a workgroup of 256, the last to arrive merging") {
  clear_kernel_environment();
  const auto plan = [](std::int64_t rows, std::int64_t v, std::uint64_t scratch) {
    const auto prog = single_task(opcode::sample_argmax, {{"logits", {rows, v}}}, {"ids", {rows}, dtype::i32}, {});
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000 * (b + 1);
    const auto d = device(true);
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, d, false};
    c.scratch_address = scratch;
    return vm::vulkan::kernel_for(opcode::sample_argmax).planner(c);
  };
  // The first call (no scratch yet) asks for the counters and parts and plans one workgroup a row.
  const auto first = plan(1, 151936, 0);
  CHECK(first.scratch_bytes == 4 * (4 + 2 * 19));
  CHECK(first.spec_constants == std::vector<std::uint32_t>{1024, 1, 1});
  // With it: ceil(151936 / 8192) = 19 workgroups of 256 over the row, 16-byte loads.
  const auto l = plan(1, 151936, 0x700000);
  CHECK(l.scratch_bytes == first.scratch_bytes);
  CHECK(l.spec_constants == std::vector<std::uint32_t>{256, 1, 19});
  CHECK(l.groups == std::array<std::uint32_t, 3>{19, 1, 1});
  // Rows in the grid's second dimension, a counter each; an odd row takes the scalar loads.
  const auto l3 = plan(3, 151935, 0x700000);
  CHECK(l3.groups == std::array<std::uint32_t, 3>{19, 3, 1});
  CHECK(l3.spec_constants == std::vector<std::uint32_t>{256, 0, 19});
  CHECK(l3.scratch_bytes == 4 * (4 + 2 * 3 * 19));
  CHECK(plan(1, 16385, 0x700000).spec_constants.at(2) == 3u);
  // Rows under 16384 logits (no vocabulary) stay one workgroup a row with no scratch.
  const auto small = plan(4, 8000, 0);
  CHECK(small.scratch_bytes == 0);
  CHECK(small.spec_constants == std::vector<std::uint32_t>{256, 1, 1});
  CHECK(small.groups[0] == 4);
  // OCTO_ARGMAX_SPLIT=0: the single workgroup even with the scratch; other values fail, naming it.
  ::setenv("OCTO_ARGMAX_SPLIT", "0", 1);
  CHECK(plan(1, 151936, 0x700000).spec_constants == std::vector<std::uint32_t>{1024, 1, 1});
  ::setenv("OCTO_ARGMAX_SPLIT", "2", 1);
  CHECK_THROWS_WITH_AS(plan(1, 151936, 0x700000), doctest::Contains("OCTO_ARGMAX_SPLIT"), octo::error);
  clear_kernel_environment();
}

namespace {

/// The plan of a 512-row prefill GEMM of an n x k F16 weight at the `fast` precision on a device with
/// cooperative matrices (kernels/gemm.cpp, pick_coop).
vm::vulkan::kernel_launch plan_prefill_gemm(std::int64_t n, std::int64_t k) {
  ir::param_list p;
  p.set(param_key::K, k).set(param_key::N_tile, n).set(param_key::n_off, 0).set(param_key::M_tile, 512);
  const auto prog = single_task(opcode::gemm_tile, {{"x", {512, k}}, {"w", {n, k}, dtype::f16, ir::buffer_kind::weight}},
                                {"y", {512, n}}, p);
  return plan_on_subgroup_device(prog, true);
}

}  // namespace

TEST_CASE("prefill GEMM on quantized weights: the weight tile dequantized once into the shared scratch from 256 rows") {
  clear_kernel_environment();
  // rows x (n_tile = 96 of a 160 x 256 weight from row n_off = 64), the `fast` precision, on tensor cores
  const auto plan = [](dtype w, std::int64_t rows, std::uint64_t scratch) {
    ir::param_list p;
    p.set(param_key::K, 256).set(param_key::N_tile, 96).set(param_key::n_off, 64).set(param_key::M_tile, rows);
    const auto prog = single_task(opcode::gemm_tile, {{"x", {rows, 256}}, {"w", {160, 256}, w, ir::buffer_kind::weight}},
                                  {"y", {rows, 160}}, p);
    return plan_on_subgroup_device(prog, true, scratch);
  };
  const auto lower = [](dtype w) {
    std::string n(ir::name(w));
    for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return n;
  };
  for (dtype w : {dtype::q4_k, dtype::q6_k, dtype::q8_0, dtype::bf16}) {
    CAPTURE(ir::name(w));
    // Without the scratch (the recorder's first call): the direct kernel, and the ask: n_tile rows of K halves.
    const auto ask = plan(w, 512, 0);
    CHECK(ask.shader == "gemm_coopf_" + lower(w));
    CHECK(ask.before.empty());
    CHECK(ask.shared_scratch_bytes == 96u * 256u * 2u);
    // With it: weights_f16_<dt> over the tile, then gemm_coopf_f16 reading the scratch as row n_off's base.
    const auto l = plan(w, 512, 0x900000);
    CHECK(l.shader == "gemm_coopf_f16");
    REQUIRE(l.before.size() == 1);
    CHECK(l.before[0].shader == "weights_f16_" + lower(w));
    std::uint64_t w_base = 0;
    std::memcpy(&w_base, l.push_constants.bytes.data() + 8, 8);  // matmul_push: x, then w
    CHECK(w_base == 0x900000 - 64u * 256u * 2u);
    // Under 256 rows the second pass over the weight does not pay: the direct kernel, no ask.
    const auto small = plan(w, 128, 0x900000);
    CHECK(small.before.empty());
    CHECK(small.shared_scratch_bytes == 0);
  }
  // F16 weights are read as stored: the scratch goes to x's rows instead (below).
  CHECK(plan(dtype::f16, 512, 0x900000).shader == "gemm_coopf_f16");
  REQUIRE(plan(dtype::f16, 512, 0x900000).before.size() == 1);
  CHECK(plan(dtype::f16, 512, 0x900000).before[0].shader == "rows_f16_f32");
}

TEST_CASE("prefill GEMM on tensor cores: x's rows rounded once to f16 into the shared scratch from 256 rows, three stages") {
  clear_kernel_environment();
  // rows m_off .. m_off + rows of x [600, 256] times 96 rows of an F16 weight (read as stored).
  const auto program = [](std::int64_t rows, std::int64_t m_off) {
    ir::param_list p;
    p.set(param_key::K, 256).set(param_key::N_tile, 96).set(param_key::n_off, 0).set(param_key::M_tile, rows);
    p.set(param_key::m_off, m_off);
    return single_task(opcode::gemm_tile, {{"x", {600, 256}}, {"w", {96, 256}, dtype::f16, ir::buffer_kind::weight}},
                       {"y", {600, 96}}, p);
  };
  const auto plan = [](const ir::program& prog, std::uint64_t scratch) { return plan_on_subgroup_device(prog, true, scratch); };
  // The recorder's first call: the direct kernel and the ask, rows of K halves, keyed by x's rows.
  const auto ask = plan(program(512, 64), 0);
  CHECK(ask.before.empty());
  CHECK(ask.spec_constants.size() == 6);
  CHECK(ask.shared_scratch_bytes == 512u * 256u * 2u);
  CHECK(!ask.shared_scratch_key.empty());
  // With the scratch: rows_f16_f32 over x's rows 64 .. 575 into it, the kernel in its X16 mode reading
  // it as row 0's base.
  const auto l = plan(program(512, 64), 0x900000);
  CHECK(l.shader == "gemm_coopf_f16");
  // spec constants: workgroup, fragments along M and N, K step, subgroups along M, epilogue, X16, the
  // three-stage K loop; its K step is 64 wherever that fits.
  REQUIRE(l.spec_constants.size() == 8);
  CHECK(l.spec_constants[6] == 1u);
  CHECK(l.spec_constants[7] == 1u);
  CHECK(l.spec_constants[3] == 64u);
  REQUIRE(l.before.size() == 1);
  CHECK(l.before[0].shader == "rows_f16_f32");
  std::uint64_t x_base = 0, src = 0, dst = 0;
  std::memcpy(&x_base, l.push_constants.bytes.data(), 8);  // matmul_push: x first
  CHECK(x_base == 0x900000 - 64u * 256u * 2u);
  std::memcpy(&src, l.before[0].push_constants.bytes.data(), 8);
  std::memcpy(&dst, l.before[0].push_constants.bytes.data() + 8, 8);
  CHECK(src == 0x10000);  // x, the program's first buffer
  CHECK(dst == 0x900000);
  // The same rows of the same x under another weight (Q, K, V) ask with the same key; other rows do not.
  CHECK(plan(program(512, 64), 0).shared_scratch_key == ask.shared_scratch_key);
  CHECK(plan(program(512, 0), 0).shared_scratch_key != ask.shared_scratch_key);
  // Under 256 rows, with the norm (x squared in f32), or turned off: x read as f32.
  CHECK(plan(program(128, 0), 0x900000).before.empty());
  CHECK(plan(program(128, 0), 0x900000).shared_scratch_bytes == 0);
  // The norm of an RMSNORM_GEMV goes ahead instead (plan_norm_x): norm_f16 over x's rows into the
  // scratch, the kernel's plain epilogue in its X16 mode reading it; the same key for every GEMM of that
  // x with that norm weight, another than x's plain rounding. A fused op over many rows takes every row
  // of x (no M_tile). OCTO_GEMM_NORM_AHEAD=0: the norm in the staging (epilogue 1), no pass ahead.
  const auto norm_program = [](std::int64_t rows) {
    ir::param_list p;
    p.set(param_key::K, 256).set(param_key::N_tile, 96).set(param_key::n_off, 0).set(param_key::hidden, 256);
    p.set_real(param_key::eps, 1e-6);
    return single_task(opcode::rmsnorm_gemv,
                       {{"x", {rows, 256}}, {"norm_w", {256}}, {"w", {96, 256}, dtype::f16, ir::buffer_kind::weight}},
                       {"y", {rows, 96}}, p);
  };
  {
    const auto normed = plan(norm_program(512), 0x900000);
    REQUIRE(normed.before.size() == 1);
    CHECK(normed.before[0].shader == "norm_f16");
    REQUIRE(normed.spec_constants.size() == 8);
    CHECK(normed.spec_constants[5] == 0u);
    CHECK(normed.spec_constants[6] == 1u);
    CHECK(normed.shared_scratch_bytes == 512u * 256u * 2u);
    std::uint64_t nx = 0, nsrc = 0, ndst = 0, nnorm = 0;
    std::memcpy(&nx, normed.push_constants.bytes.data(), 8);
    CHECK(nx == 0x900000);  // rows 0 .. 511: the scratch is row 0's base
    std::memcpy(&nsrc, normed.before[0].push_constants.bytes.data(), 8);  // norm.comp: x, w, b, y
    std::memcpy(&ndst, normed.before[0].push_constants.bytes.data() + 24, 8);
    CHECK(nsrc == 0x10000);  // x, the program's first buffer
    CHECK(ndst == 0x900000);
    std::memcpy(&nnorm, normed.push_constants.bytes.data() + normed.push_constants.bytes.size() - 40, 8);
    // the GEMM's own norm fields empty (matmul_push: ..., residual, norm_w, dtype, eps, then the RoPE's 4 words)
    CHECK(nnorm == 0);
    const auto ask_n = plan(norm_program(512), 0);
    CHECK(ask_n.before.empty());
    CHECK(ask_n.shared_scratch_key != plan(program(512, 0), 0).shared_scratch_key);  // not x's plain rounding
    CHECK(ask_n.shared_scratch_key == normed.shared_scratch_key);
    ::setenv("OCTO_GEMM_NORM_AHEAD", "0", 1);
    const auto staged = plan(norm_program(512), 0x900000);
    ::unsetenv("OCTO_GEMM_NORM_AHEAD");
    CHECK(staged.before.empty());
    CHECK(staged.spec_constants[5] == 1u);
    // Under 256 rows too the norm stays in the staging, and x is read as f32.
    const auto small = plan(norm_program(128), 0x900000);
    CHECK(small.before.empty());
    CHECK(small.spec_constants[5] == 1u);
  }
  ::setenv("OCTO_GEMM_DEEP", "0", 1);
  CHECK(plan(program(512, 0), 0x900000).spec_constants.size() == 7);  // X16, two stages
  ::unsetenv("OCTO_GEMM_DEEP");
  ::setenv("OCTO_GEMM_X16", "0", 1);
  CHECK(plan(program(512, 0), 0x900000).before.empty());
  // =1 (tests): at any row count, and into gemm_reg at the `accurate` precision too.
  ::setenv("OCTO_GEMM_X16", "1", 1);
  CHECK(plan(program(128, 0), 0x900000).before.size() == 1);
  ::setenv("OCTO_GEMM_KERNEL", "reg", 1);
  const auto reg = plan_on_subgroup_device(program(64, 0), false, 0x900000);
  ::unsetenv("OCTO_GEMM_KERNEL");
  CHECK(reg.shader == "gemm_reg_f16");
  REQUIRE(reg.spec_constants.size() == 7);  // gemm_reg has no three-stage loop
  CHECK(reg.spec_constants[6] == 1u);
  ::unsetenv("OCTO_GEMM_X16");
}

TEST_CASE("the cooperative-matrix layout probe: NVIDIA's mma.m16n8k16 fragments in either factor order, and nothing else") {
  // What shaders/vm_coop_layout.comp writes on a device with that layout, built from the PTX ISA's
  // fragment tables (invocation l: rows l / 4 and l / 4 + 8, columns 2 (l % 4) and the next).
  std::vector<float> probe(386);
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const int c_rc[4][2] = {{g, 2 * t}, {g, 2 * t + 1}, {g + 8, 2 * t}, {g + 8, 2 * t + 1}};
    for (int i = 0; i < 4; ++i) probe[static_cast<std::size_t>(4 * lane + i)] = static_cast<float>(c_rc[i][0] * 8 + c_rc[i][1]);
    const int a_rc[8][2] = {{g, 2 * t}, {g, 2 * t + 1}, {g + 8, 2 * t}, {g + 8, 2 * t + 1},
                            {g, 2 * t + 8}, {g, 2 * t + 9}, {g + 8, 2 * t + 8}, {g + 8, 2 * t + 9}};
    for (int i = 0; i < 8; ++i)
      probe[static_cast<std::size_t>(128 + 8 * lane + i)] = static_cast<float>(a_rc[i][0] * 16 + a_rc[i][1]);
  }
  probe[384] = 4;
  probe[385] = 8;
  CHECK(vm::vulkan::coop_mma_factor_order(probe) == 0u);
  // What the H100's driver (580.159.04) holds, as octo_devices --boot printed it
  // (benchmarks/results/2026-12-07-h100-attn-regs/octo_devices_boot.txt): the accumulators as above, a
  // 16 x 16 factor's pairs columns first, (g, 2t), (g, 2t + 8), (g + 8, 2t), (g + 8, 2t + 8).
  auto columns_first = probe;
  for (int lane = 0; lane < 32; ++lane)
    for (int e = 0; e < 2; ++e)
      std::swap(columns_first[static_cast<std::size_t>(128 + 8 * lane + 2 + e)],
                columns_first[static_cast<std::size_t>(128 + 8 * lane + 4 + e)]);
  CHECK(columns_first[128 + 8 * 0 + 2] == 8.0f);    // lane 0: 0 1 8 9 128 129 136 137
  CHECK(columns_first[128 + 8 * 5 + 4] == 146.0f);  // lane 5: 18 19 26 27 146 147 154 155
  CHECK(vm::vulkan::coop_mma_factor_order(columns_first) == 1u);
  auto swapped = probe;  // two elements of one invocation in the other order
  std::swap(swapped[4 * 5 + 0], swapped[4 * 5 + 1]);
  CHECK_FALSE(vm::vulkan::coop_mma_factor_order(swapped));
  auto moved = probe;  // the 16 x 16 factor's halves the other way round
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i)
      std::swap(moved[static_cast<std::size_t>(128 + 8 * lane + i)], moved[static_cast<std::size_t>(128 + 8 * lane + 4 + i)]);
  CHECK_FALSE(vm::vulkan::coop_mma_factor_order(moved));
  auto longer = probe;  // another fragment size
  longer[385] = 16;
  CHECK_FALSE(vm::vulkan::coop_mma_factor_order(longer));
  CHECK_FALSE(vm::vulkan::coop_mma_factor_order(std::vector<float>(386, 0.0f)));  // the probe never ran
  CHECK_FALSE(vm::vulkan::coop_mma_factor_order(std::span<const float>(probe.data(), 385)));
  // Where it is not the mma order, octo_devices --boot prints what each invocation holds.
  const auto text = vm::vulkan::describe_coop_layout(moved);
  CHECK(text.rfind("16x8 (length 4): l0 [0 1 64 65] l1 [2 3 66 67]", 0) == 0);
  CHECK(text.find("; 16x16 (length 8): l0 [8 9 136 137 0 1 128 129] l1 [10 11 138 139 2 3 130 131]") != std::string::npos);
  CHECK(text.find(" l31 [") != std::string::npos);
  CHECK(vm::vulkan::describe_coop_layout(std::span<const float>(probe.data(), 385)).empty());
  auto odd = probe;  // what a driver wrote is printed as it is, whatever it is (no integer conversion)
  odd[0] = std::nanf("");
  odd[1] = 1e30f;
  odd[385] = -3.0f;
  const auto odd_text = vm::vulkan::describe_coop_layout(odd);
  CHECK(odd_text.rfind("16x8 (length 4): l0 [nan 1e+30 64 65]", 0) == 0);
  CHECK(odd_text.find("; 16x16 (length -3): l0 [0 1 128 129 8 9 136 137]") != std::string::npos);
}

TEST_CASE("prefill attention on tensor cores: the softmax in registers by default, only with the mma fragments' layout and no key split") {
  clear_kernel_environment();
  const auto prog = attention(32, false);
  std::vector<std::uint64_t> addresses(prog.buffers.size());
  for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000 * (b + 1);
  const auto regs_of = [&](bool layout_known) {
    auto d = device(true);
    d.coop_mma_layout = layout_known;
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, d, true};
    const auto l = vm::vulkan::kernel_for(prog.tasks.at(0).op).planner(c);
    REQUIRE(l.shader == "attention_coop");
    REQUIRE(l.spec_constants.size() == 9);
    return std::pair{l.spec_constants[7], l.spec_constants[6]};  // REGS, the key splits
  };
  // By default where the probe found the layout (measured on the H100): unsplit, in registers; elsewhere
  // the shared-memory form (head_dim 32: 2 key splits).
  CHECK(regs_of(true) == std::pair{1u, 1u});
  CHECK(regs_of(false) == std::pair{0u, 2u});
  ::setenv("OCTO_ATTENTION_REGS", "0", 1);  // declined: the shared-memory form on either
  CHECK(regs_of(true) == std::pair{0u, 2u});
  CHECK(regs_of(false) == std::pair{0u, 2u});
  ::setenv("OCTO_ATTENTION_REGS", "1", 1);
  CHECK(regs_of(true) == std::pair{1u, 1u});   // asked for, the layout known: unsplit, in registers
  {  // the factor's pair order as probed (spec constant 8): NVIDIA's driver holds it columns first
    auto d = device(true);
    d.coop_mma_layout = true;
    d.coop_factor_order = 1;
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, d, true};
    const auto l = vm::vulkan::kernel_for(prog.tasks.at(0).op).planner(c);
    REQUIRE(l.spec_constants.size() == 9);
    CHECK(l.spec_constants[7] == 1u);
    CHECK(l.spec_constants[8] == 1u);
  }
  CHECK(regs_of(false) == std::pair{0u, 2u});  // asked for on another layout: the shared-memory form
  ::setenv("OCTO_ATTENTION_SPLIT", "2", 1);    // with a key split asked for too: the shared-memory form
  CHECK(regs_of(true) == std::pair{0u, 2u});
  ::unsetenv("OCTO_ATTENTION_SPLIT");
  ::unsetenv("OCTO_ATTENTION_REGS");
}

TEST_CASE("prefill q, k, v: RMSNORM_GEMV_ROPE / RMSNORM_GEMV_KV over many rows take the GEMM kernels' RoPE / KV epilogue") {
  clear_kernel_environment();
  // [x, norm_w, W, cache, pos] -> cache: 64 rows of 2 heads of 64, the norm ahead from 256 rows.
  const auto kv_program = [](std::int64_t rows, std::int64_t head_dim, std::int64_t n_rot) {
    ir::param_list p;
    p.set(param_key::K, 256).set(param_key::hidden, 256).set(param_key::head_dim, head_dim).set(param_key::n_rot, n_rot);
    p.set(param_key::pos, 0).set(param_key::rope_style, 0);
    p.set_real(param_key::eps, 1e-6).set_real(param_key::theta, 10000.0);
    ir::program prog = single_task(opcode::rmsnorm_gemv_kv,
                                   {{"x", {rows, 256}}, {"norm_w", {256}}, {"w", {128, 256}, dtype::f16, ir::buffer_kind::weight},
                                    {"cache", {1024, 128}, dtype::f16, ir::buffer_kind::kv_cache}, {"pos", {rows}, dtype::i32}},
                                   {"unused", {1}}, p);
    prog.tasks[0].outputs[0] = prog.tasks[0].inputs[3];  // writes the cache it reads
    return prog;
  };
  for (std::int64_t rows : {64, 512}) {
    CAPTURE(rows);
    const auto l = plan_on_subgroup_device(kv_program(rows, 64, 64), false, 0x900000);
    CHECK(l.shader.rfind("gemm_reg_", 0) == 0);  // never gemm.comp (no such epilogue)
    REQUIRE(l.spec_constants.size() >= 6);
    CHECK(l.spec_constants[5] == (rows >= 256 ? 5u : 6u));  // the norm ahead (5) or in the staging (6)
  }
  // head_dim or n_rot not a multiple of 4 (a lane's two pairs), or OCTO_GEMM_ROPE_KV=0: the GEMV kernel.
  CHECK(plan_on_subgroup_device(kv_program(64, 64, 62), false, 0x900000).shader.rfind("gemm", 0) != 0);
  ::setenv("OCTO_GEMM_ROPE_KV", "0", 1);
  CHECK(plan_on_subgroup_device(kv_program(64, 64, 64), false, 0x900000).shader.rfind("gemm_", 0) != 0);
  ::unsetenv("OCTO_GEMM_ROPE_KV");
}

TEST_CASE("prefill GEMM on tensor cores: 128 x 128 where its grid has 3/4 of a wave, else 64 x 64; K steps of 64 under a wave") {
  clear_kernel_environment();
  // spec constants: workgroup, fragments along M and N, K step, subgroups along M, the fused epilogue
  // (0: none; shaders/gemm_coop.comp)
  using sc = std::vector<std::uint32_t>;
  // 7B q/o (112 workgroups of 128 x 128) and gate/up (592), 0.5B gate/up (152): 128 x 128, K steps of 32
  for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{3584, 3584}, {18944, 3584}, {4864, 896}}) {
    CAPTURE(n);
    const auto l = plan_prefill_gemm(n, k);
    CHECK(l.shader == "gemm_coopf_f16");
    CHECK(l.spec_constants == sc{256, 4, 4, 32, 2, 0});
  }
  // 1.5B q/o: 48 workgroups of 128 x 128 -> 64 x 64 (192 workgroups: K steps of 32); rows too short for
  // a K split (the case below)
  CHECK(plan_prefill_gemm(1536, 1536).spec_constants == sc{256, 2, 2, 32, 2, 0});
  // 1.5B down (K = 8960): 128 x 128 with K split in 2, unsplit until the recorder gives it its scratch
  CHECK(plan_prefill_gemm(1536, 8960).spec_constants == sc{256, 4, 4, 32, 2, 0});
  {  // without the split: 64 x 64
    ::setenv("OCTO_GEMM_SPLITK", "1", 1);
    CHECK(plan_prefill_gemm(1536, 8960).spec_constants == sc{256, 2, 2, 32, 2, 0});
    ::unsetenv("OCTO_GEMM_SPLITK");
  }
  // 0.5B q/o: 112 workgroups of 64 x 64, under a wave -> K steps of 64
  CHECK(plan_prefill_gemm(896, 896).spec_constants == sc{256, 2, 2, 64, 2, 0});
  // 1.5B k/v (32 workgroups of 64 x 64) too
  CHECK(plan_prefill_gemm(256, 1536).spec_constants == sc{256, 2, 2, 64, 2, 0});
  // OCTO_GEMM_NARROW=1: outputs of at most 512 columns (K and V of the 0.5B, 1.5B and 7B) on 32 x 32 tiles
  // in 4 subgroups of 16 x 16 (128 invocations), K steps of 64 under a wave; 1024 columns (Qwen3-0.6B's)
  // keep 64 x 64.
  ::setenv("OCTO_GEMM_NARROW", "1", 1);
  CHECK(plan_prefill_gemm(256, 1536).spec_constants == sc{128, 1, 2, 64, 2, 0});
  CHECK(plan_prefill_gemm(128, 896).spec_constants == sc{128, 1, 2, 64, 2, 0});
  CHECK(plan_prefill_gemm(512, 3584).spec_constants == sc{128, 1, 2, 32, 2, 0});  // 256 workgroups: steps of 32
  CHECK(plan_prefill_gemm(1024, 1024).spec_constants == sc{256, 2, 2, 64, 2, 0});
  CHECK(plan_prefill_gemm(256, 96).spec_constants == sc{128, 1, 2, 32, 2, 0});
  ::unsetenv("OCTO_GEMM_NARROW");
  // K = 32 x odd: steps of 32 whatever the grid
  CHECK(plan_prefill_gemm(256, 96).spec_constants == sc{256, 2, 2, 32, 2, 0});
  // With the shared scratch: x as f16 rows (X16) and the three-stage loop on the same tiles, K steps of
  // 64 wherever they fit (64 x 64 tiles; 128 x 128 ones would need 73 KiB at 64 against the device's 48).
  const auto with_scratch = [](std::int64_t n, std::int64_t k) {
    ir::param_list p;
    p.set(param_key::K, k).set(param_key::N_tile, n).set(param_key::n_off, 0).set(param_key::M_tile, 512);
    return plan_on_subgroup_device(single_task(opcode::gemm_tile, {{"x", {512, k}}, {"w", {n, k}, dtype::f16, ir::buffer_kind::weight}},
                                               {"y", {512, n}}, p),
                                   true, 0x900000);
  };
  CHECK(with_scratch(3584, 3584).spec_constants == sc{256, 4, 4, 32, 2, 0, 1, 1});
  CHECK(with_scratch(18944, 3584).spec_constants == sc{256, 4, 4, 32, 2, 0, 1, 1});
  CHECK(with_scratch(1536, 1536).spec_constants == sc{256, 2, 2, 64, 2, 0, 1, 1});
  CHECK(with_scratch(4864, 896).spec_constants == sc{256, 4, 4, 32, 2, 0, 1, 1});
  CHECK(with_scratch(4864, 896).groups == (std::array<std::uint32_t, 3>{38, 4, 1}));
  CHECK(with_scratch(256, 96).spec_constants == sc{256, 2, 2, 32, 2, 0, 1, 1});
  ::setenv("OCTO_GEMM_NARROW", "1", 1);
  CHECK(with_scratch(256, 1536).spec_constants == sc{128, 1, 2, 64, 2, 0, 1, 1});
  ::unsetenv("OCTO_GEMM_NARROW");
}

TEST_CASE("prefill GEMM on tensor cores: a grid under 3/4 of a wave splits each 128 x 128 tile's K over workgroups") {
  clear_kernel_environment();
  using sc = std::vector<std::uint32_t>;
  // y [512, n] += x [512, k] . W^T (GEMV_ADD: o and down projections), F16 weights.
  const auto program = [](std::int64_t n, std::int64_t k, opcode op = opcode::gemv_add) {
    ir::param_list p;
    p.set(param_key::K, k).set(param_key::N_tile, n).set(param_key::n_off, 0).set(param_key::M_tile, 512);
    std::vector<octo::test::tensor_spec> in{{"x", {512, k}}, {"w", {n, k}, dtype::f16, ir::buffer_kind::weight}};
    if (op == opcode::gemv_add) in.push_back({"r", {512, n}});
    return single_task(op, in, {"y", {512, n}}, p);
  };
  constexpr std::uint64_t shared = 0x900000, own = 0xa00000, transient = 0xb00000;
  // The recorder's first calls: no scratch of the task's own, so the launch stays unsplit and asks for
  // one counter a tile (48 tiles of 128 x 128) and the partials (2 splits x 48 tiles x 128 x 128 floats).
  const auto ask = plan_on_subgroup_device(program(1536, 8960), true, shared);
  CHECK(ask.scratch_bytes == 48u * 4u);
  CHECK(ask.transient_scratch_bytes == 2u * 48u * 128u * 128u * 4u);
  CHECK(ask.spec_constants.size() == 8);  // X16 and the three-stage loop, no split
  CHECK(ask.shader == "gemm_coopf_f16");
  CHECK(ask.push_constants.bytes.size() == 120);
  // With it: the split's module, spec constant 9 = 2, the row tiles twice along y, the partials in the
  // norm weight's field (offset 88) and the counters last (offset 120, the block's 128 bytes).
  const auto l = plan_on_subgroup_device(program(1536, 8960), true, shared, own, transient);
  CHECK(l.shader == "gemm_coopf_f16_ksplit");
  CHECK(l.spec_constants == sc{256, 4, 4, 32, 2, 2, 1, 1, 0, 2});
  CHECK(l.groups == (std::array<std::uint32_t, 3>{12, 8, 1}));
  REQUIRE(l.push_constants.bytes.size() == 128);
  std::uint64_t partials = 0, counters = 0;
  std::memcpy(&partials, l.push_constants.bytes.data() + 88, 8);
  std::memcpy(&counters, l.push_constants.bytes.data() + 120, 8);
  CHECK(partials == transient);
  CHECK(counters == own);
  // Qwen2.5-3B's down (2048 x 11008: 64 tiles) splits in 2, a plain GEMM_TILE as a GEMV_ADD.
  CHECK(plan_on_subgroup_device(program(2048, 11008, opcode::gemm_tile), true, shared, own, transient).spec_constants.at(9) == 2u);
  // Splits that would keep under 2048 of K do not pay (the 0.5B's down, 896 x 4864; Qwen3-0.6B's, 1024 x
  // 3072; the 1.5B's o, 1536 x 1536): 64 x 64 tiles, unsplit.
  for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{896, 4864}, {1024, 3072}, {1536, 1536}}) {
    CAPTURE(k);
    const auto small = plan_on_subgroup_device(program(n, k), true, shared, own, transient);
    CHECK(small.spec_constants.at(1) == 2u);
    CHECK(small.spec_constants.size() < 10);
    CHECK(small.scratch_bytes == 0);
  }
  // 7B's o (112 tiles: 3/4 of a wave) stays unsplit.
  CHECK(plan_on_subgroup_device(program(3584, 3584), true, shared, own, transient).spec_constants.size() < 10);
  // Forced: OCTO_GEMM_SPLITK=N where every split keeps a K step (8960 / 32 = 280 steps), 1 for none.
  ::setenv("OCTO_GEMM_SPLITK", "3", 1);
  CHECK(plan_on_subgroup_device(program(1536, 8960), true, shared, own, transient).spec_constants.at(9) == 3u);
  CHECK(plan_on_subgroup_device(program(1536, 8960), true, shared, own, transient).groups[1] == 12u);
  ::setenv("OCTO_GEMM_SPLITK", "1", 1);
  CHECK(plan_on_subgroup_device(program(1536, 8960), true, shared, own, transient).spec_constants.at(1) == 2u);
  ::unsetenv("OCTO_GEMM_SPLITK");
  // The accurate precision (f32 kernels) never splits, nor a quantized weight under 256 rows (read as
  // it is stored, not as f16 rows).
  CHECK(plan_on_subgroup_device(program(1536, 8960), false, shared, own, transient).scratch_bytes == 0);
  {
    ir::param_list p;
    p.set(param_key::K, 8960).set(param_key::N_tile, 1536).set(param_key::n_off, 0).set(param_key::M_tile, 200);
    const auto q = single_task(opcode::gemm_tile, {{"x", {200, 8960}}, {"w", {1536, 8960}, dtype::q8_0, ir::buffer_kind::weight}},
                               {"y", {200, 1536}}, p);
    const auto l200 = plan_on_subgroup_device(q, true, shared, own, transient);
    CHECK(l200.shader == "gemm_coopf_q8_0");
    CHECK(l200.scratch_bytes == 0);
  }
}

TEST_CASE("prefill GEMMs with a fused epilogue: RMSNORM_GEMV and GEMV_ADD over many rows specialize it (constant 5)") {
  clear_kernel_environment();
  const octo::test::tensor_spec x{"x", {512, 1536}}, nw{"norm_w", {1536}, dtype::f32, ir::buffer_kind::weight},
      wt{"w", {1536, 1536}, dtype::f16, ir::buffer_kind::weight}, r{"r", {512, 1536}};
  ir::param_list p;
  p.set(param_key::K, 1536).set(param_key::N_tile, 1536).set(param_key::n_off, 0).set(param_key::M_tile, 512);
  ir::param_list pn = p;
  pn.set(param_key::hidden, 1536).set_real(param_key::eps, 1e-6);
  for (bool coop : {true, false}) {
    CAPTURE(coop);
    const auto norm = plan_on_subgroup_device(single_task(opcode::rmsnorm_gemv, {x, nw, wt}, {"y", {512, 1536}}, pn), coop);
    const auto add = plan_on_subgroup_device(single_task(opcode::gemv_add, {x, wt, r}, {"y", {512, 1536}}, p), coop);
    CHECK(norm.shader.starts_with("gemm"));
    CHECK(add.shader.starts_with("gemm"));
    REQUIRE(norm.spec_constants.size() == 6);
    REQUIRE(add.spec_constants.size() == 6);
    CHECK(norm.spec_constants[5] == 1);
    CHECK(add.spec_constants[5] == 2);
  }
}

namespace {

/// The plan of a one-row GEMV_TILE of an n x k weight of dtype `w` on a subgroup device (kernels/gemv.cpp).
/// The plan of an n x k GEMV over `rows` x rows; `fast` and `int_dot` (accelerated or not) set the
/// precision and what the device says of packed int8 dot products.
vm::vulkan::kernel_launch plan_decode_gemv(std::int64_t n, std::int64_t k, dtype w, bool fast = false, int int_dot = 0,
                                           std::int64_t rows = 1, std::string_view regime = {}) {
  ir::param_list p;
  p.set(param_key::K, k).set(param_key::N_tile, n).set(param_key::n_off, 0);
  auto prog =
      single_task(opcode::gemv_tile, {{"x", {rows, k}}, {"w", {n, k}, w, ir::buffer_kind::weight}}, {"y", {rows, n}}, p);
  if (!regime.empty()) prog.set_meta("regime", ir::text(regime));
  std::vector<std::uint64_t> addresses(prog.buffers.size());
  for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000 * (b + 1);
  auto d = device(true);
  d.int_dot = int_dot > 0;
  d.int_dot_accelerated = int_dot > 1;
  vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, d, fast};
  return vm::vulkan::kernel_for(opcode::gemv_tile).planner(c);
}

}  // namespace

TEST_CASE("decode GEMV rows per workgroup: 2 for narrow outputs (short rows in the 32-element formats) and 16-bit weights, else 4") {
  clear_kernel_environment();
  // Spec constant 1 is shaders/gemv.comp's NR (benchmarks/results/2026-11-28-h100-decode).
  const auto nr = [](std::int64_t n, std::int64_t k, dtype w) { return plan_decode_gemv(n, k, w).spec_constants.at(1); };
  CHECK(nr(1536, 1536, dtype::q4_k) == 2);   // 1.5B q / o
  CHECK(nr(512, 3584, dtype::q4_k) == 2);    // 7B k / v
  CHECK(nr(3584, 18944, dtype::q6_k) == 2);  // 7B down: narrow whatever K in the K-quants
  CHECK(nr(4096, 256, dtype::q5_k) == 2);    // the last narrow width
  CHECK(nr(4224, 256, dtype::q5_k) == 4);    // past it
  CHECK(nr(8960, 1536, dtype::q4_k) == 4);   // 1.5B gate / up width
  CHECK(nr(1536, 1536, dtype::q8_0) == 2);   // 1.5B q / o
  CHECK(nr(896, 896, dtype::q4_0) == 2);     // 0.5B
  CHECK(nr(3584, 3584, dtype::q8_0) == 4);   // 7B q / o: 32-element blocks past K = 2048 keep 4
  CHECK(nr(1536, 8960, dtype::q8_0) == 4);   // 1.5B down in Q8_0
  CHECK(nr(16384, 1536, dtype::q8_0) == 4);  // LM-head-like
  CHECK(nr(896, 896, dtype::f16) == 2);      // 16-bit weights, one x row, narrow outputs: 2 (F32 too)
  CHECK(nr(3584, 3584, dtype::f32) == 2);
  CHECK(nr(4096, 3584, dtype::f16) == 2);
  CHECK(nr(37888, 3584, dtype::bf16) == 4);  // wide outputs (gate|up, the LM head): 4
  CHECK(nr(151936, 896, dtype::f16) == 4);
  CHECK(plan_decode_gemv(896, 896, dtype::f16, false, 0, 3).spec_constants.at(1) == 4);  // three x rows: 4
  ::setenv("OCTO_GEMV_NR", "4", 1);          // the knob still wins
  CHECK(nr(1536, 1536, dtype::q4_k) == 4);
  ::unsetenv("OCTO_GEMV_NR");
}

TEST_CASE("16-bit decode GEMVs' width: 256 invocations over narrow outputs, 64 over wide ones (32 under 192 units a row)") {
  clear_kernel_environment();
  // Spec constant 0 is the workgroup size, 1 the rows (kernels/gemv.cpp, benchmarks/results/2026-12-02-h200-argmax).
  const auto shape = [](std::int64_t n, std::int64_t k, dtype w) {
    const auto l = plan_decode_gemv(n, k, w);
    return std::pair{l.spec_constants.at(0), l.spec_constants.at(1)};
  };
  CHECK(shape(896, 4864, dtype::f16) == std::pair{256u, 2u});     // 0.5B down projection
  CHECK(shape(128, 896, dtype::bf16) == std::pair{256u, 2u});     // 0.5B k / v
  CHECK(shape(151936, 896, dtype::f16) == std::pair{32u, 4u});    // 0.5B LM head: 112 units a row
  CHECK(shape(151936, 1536, dtype::f16) == std::pair{64u, 4u});   // 1.5B LM head: 192
  CHECK(shape(37888, 3584, dtype::f32) == std::pair{64u, 4u});    // 7B gate|up shape
  CHECK(plan_decode_gemv(896, 896, dtype::f16, false, 0, 3).spec_constants.at(0) == 64);  // three x rows: as before
  CHECK(shape(1536, 1536, dtype::q8_0).first != 256u);            // the chunk loops keep their own rule
  ::setenv("OCTO_GEMV_WG_NARROW", "128", 1);
  ::setenv("OCTO_GEMV_WG_WIDE", "128", 1);
  ::setenv("OCTO_GEMV_NR_WIDE16", "8", 1);
  CHECK(shape(896, 4864, dtype::f16) == std::pair{128u, 2u});
  CHECK(shape(151936, 896, dtype::f16) == std::pair{128u, 8u});
  ::setenv("OCTO_GEMV_WG", "512", 1);  // forces every GEMV
  CHECK(shape(896, 4864, dtype::f16).first == 512u);
  ::setenv("OCTO_GEMV_WG_WIDE", "96", 1);
  CHECK_THROWS_WITH_AS(shape(151936, 896, dtype::f16), doctest::Contains("OCTO_GEMV_WG_WIDE"), octo::error);
  clear_kernel_environment();
}

TEST_CASE("decode GEMVs on integer dot products: the fast precision, one row, a device that accelerates them") {
  clear_kernel_environment();
  // docs/precision.md item 4: int_dot 2 = the instruction, accelerated; 1 = present only.
  CHECK(plan_decode_gemv(3584, 3584, dtype::q4_k, true, 2).shader == "gemv_idot_q4_k");
  CHECK(plan_decode_gemv(896, 896, dtype::q8_0, true, 2).shader == "gemv_idot_q8_0");
  CHECK(plan_decode_gemv(3584, 18944, dtype::q6_k, true, 2).shader == "gemv_idot_q6_k");
  CHECK(plan_decode_gemv(3584, 3584, dtype::q4_k, false, 2).shader == "gemv_q4_k");  // accurate
  CHECK(plan_decode_gemv(3584, 3584, dtype::q4_k, true, 1).shader == "gemv_q4_k");   // not accelerated
  CHECK(plan_decode_gemv(3584, 3584, dtype::q4_k, true, 0).shader == "gemv_q4_k");   // no instruction
  CHECK(plan_decode_gemv(3584, 3584, dtype::q4_k, true, 2, 3).shader == "gemv_q4_k"); // three x rows
  // A prefill's one-row GEMV (its last-row head) keeps f32 (docs/precision.md item 2); a decode step's
  // does not.
  CHECK(plan_decode_gemv(152064, 3584, dtype::q8_0, true, 2, 1, "prefill").shader == "gemv_q8_0");
  CHECK(plan_decode_gemv(152064, 3584, dtype::q8_0, true, 2, 1, "decode").shader == "gemv_idot_q8_0");
  CHECK(plan_decode_gemv(37888, 3584, dtype::q3_k, true, 2).shader == "gemv_idot_q3_k");
  CHECK(plan_decode_gemv(3584, 18944, dtype::q2_k, true, 2).shader == "gemv_idot_q2_k");  // long rows
  CHECK(plan_decode_gemv(3584, 3584, dtype::q3_k, true, 2).shader == "gemv_q3_k");  // narrow: the float loop
  CHECK(plan_decode_gemv(3584, 3584, dtype::q2_k, true, 2).shader == "gemv_q2_k");
  CHECK(plan_decode_gemv(896, 896, dtype::q5_1, true, 2).shader == "gemv_idot_q5_1");
  CHECK(plan_decode_gemv(3584, 3584, dtype::iq4_xs, true, 2).shader == "gemv_iq4_xs");  // no integer loop
  CHECK(plan_decode_gemv(3584, 3584, dtype::f16, true, 2).shader == "gemv_f16");
  // Rows per workgroup: the integer loops take 4 over long rows (K >= 16384) where the float ones take 2.
  const auto nr = [](std::int64_t n, std::int64_t k, dtype w, int int_dot) {
    return plan_decode_gemv(n, k, w, true, int_dot).spec_constants.at(1);
  };
  CHECK(nr(3584, 18944, dtype::q6_k, 2) == 4);  // 7B down
  CHECK(nr(1536, 8960, dtype::q4_k, 2) == 2);   // 1.5B down: fewer workgroups lost
  CHECK(nr(3584, 3584, dtype::q4_k, 2) == 2);   // 7B q / o: short rows keep 2
  CHECK(nr(3584, 18944, dtype::q6_k, 1) == 2);  // the float loops keep 2
  CHECK(nr(37888, 3584, dtype::q8_0, 2) == 8);   // 7B gate|up in Q8_0: 8
  CHECK(nr(152064, 3584, dtype::q8_0, 2) == 8);  // 7B LM head in Q8_0
  CHECK(nr(17920, 1536, dtype::q8_0, 2) == 4);   // 1.5B gate|up keeps 4
  CHECK(nr(37888, 3584, dtype::q4_k, 2) == 8);   // the K-quants too
  CHECK(nr(17920, 1536, dtype::q4_k, 2) == 4);   // not over the 1.5B's short rows
  CHECK(nr(37888, 3584, dtype::q8_0, 1) == 4);   // the float loops keep 4
  // 8 rows only where that leaves at least 256 workgroups (2048 outputs or more), 2 under 1024 outputs.
  CHECK(nr(3584, 3584, dtype::q8_0, 2) == 8);    // 7B q / o in Q8_0
  CHECK(nr(2048, 3584, dtype::q8_0, 2) == 8);    // the first width that takes 8
  CHECK(nr(2040, 3584, dtype::q8_0, 2) == 4);
  CHECK(nr(512, 3584, dtype::q8_0, 2) == 2);     // 7B k / v in Q8_0: under 1024 outputs, 2
  CHECK(nr(896, 4864, dtype::q8_0, 2) == 2);     // 0.5B down
  CHECK(nr(1023, 3072, dtype::q8_0, 2) == 2);
  CHECK(nr(1024, 3072, dtype::q8_0, 2) == 4);
  CHECK(nr(896, 2560, dtype::q8_0, 2) == 4);     // rows under 3072 keep 4
  CHECK(nr(1536, 8960, dtype::q8_0, 2) == 4);    // 1.5B down in Q8_0
  ::setenv("OCTO_GEMV_NR_WIDE", "2", 1);
  CHECK(nr(37888, 3584, dtype::q8_0, 2) == 2);
  ::unsetenv("OCTO_GEMV_NR_WIDE");
  // The gate|up pairs (RMSNORM_SWIGLU): 8 over the short rows of the 32-element formats, else 4
  // (benchmarks/results/2026-11-29-h200-head, calls 1, 3 and 4).
  const auto swiglu = [](std::int64_t n, std::int64_t k, dtype w) {
    const octo::test::tensor_spec x{"x", {1, k}}, nw{"norm_w", {k}, dtype::f32, ir::buffer_kind::weight},
        wg{"w_gate", {n, k}, w, ir::buffer_kind::weight}, wu{"w_up", {n, k}, w, ir::buffer_kind::weight};
    ir::param_list p;
    p.set(param_key::K, k).set(param_key::N_tile, n).set(param_key::n_off, 0).set(param_key::hidden, k);
    p.set_real(param_key::eps, 1e-6);
    auto prog = single_task(opcode::rmsnorm_swiglu, {x, nw, wg, wu}, {"y", {1, n}}, p);
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000 * (b + 1);
    auto d = device(true);
    d.int_dot = d.int_dot_accelerated = true;
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, d, true};
    return vm::vulkan::kernel_for(opcode::rmsnorm_swiglu).planner(c).spec_constants;
  };
  const auto nr_swiglu = [&](std::int64_t n, std::int64_t k, dtype w) { return swiglu(n, k, w).at(1); };
  CHECK(nr_swiglu(4864, 896, dtype::q8_0) == 8);   // 0.5B gate|up
  CHECK(nr_swiglu(8960, 1536, dtype::q8_0) == 8);  // 1.5B gate|up
  CHECK(nr_swiglu(8960, 1536, dtype::q4_0) == 8);
  CHECK(nr_swiglu(8960, 1536, dtype::q4_k) == 4);  // the K-quants: 4
  CHECK(nr_swiglu(18944, 3584, dtype::q4_k) == 4); // the 7B's: 4, where its other wide outputs take 8
  CHECK(nr_swiglu(18944, 3584, dtype::q8_0) == 4);
  CHECK(nr_swiglu(4864, 3072, dtype::q8_0) == 4);  // from K = 3072
  CHECK(nr_swiglu(4864, 3040, dtype::q8_0) == 8);
  CHECK(nr_swiglu(1024, 2560, dtype::q8_0) == 4);  // under 2048 outputs (not narrow: long rows)
  CHECK(nr_swiglu(1024, 896, dtype::q8_0) == 4);   // narrow, x rounded in every workgroup: 4 (512 of them)
  CHECK(nr_swiglu(256, 896, dtype::q8_0) == 2);    // 128 workgroups at 4: 2, as every narrow output
  // Q4_K / Q5_K chunks (spec constant 9, HALVES): whole 64-element groups (2) only for the Q4_K gate|up
  // pairs over rows of K >= 1536, 16-byte ones (1) elsewhere (benchmarks/results/2026-12-03-h200-halves).
  CHECK(swiglu(18944, 3584, dtype::q4_k).at(9) == 2);
  CHECK(swiglu(8960, 1536, dtype::q4_k).at(9) == 2);
  CHECK(swiglu(2816, 1280, dtype::q4_k).at(9) == 1);
  CHECK(swiglu(18944, 3584, dtype::q5_k).at(9) == 1);
  CHECK(plan_decode_gemv(3584, 18944, dtype::q4_k, true, 2).spec_constants.at(9) == 1);
  CHECK(plan_decode_gemv(37888, 3584, dtype::q4_k, true, 2).spec_constants.at(9) == 1);
  CHECK(plan_decode_gemv(37888, 3584, dtype::q4_k, true, 2).spec_constants.at(0) == 64);  // 112 chunks a row
  ::setenv("OCTO_GEMV_HALVES", "2", 1);
  CHECK(plan_decode_gemv(3584, 18944, dtype::q4_k, true, 2).spec_constants.at(9) == 2);
  CHECK(plan_decode_gemv(3584, 18944, dtype::q5_k, true, 2).spec_constants.at(9) == 2);
  CHECK(plan_decode_gemv(1536, 1536, dtype::q4_k, true, 2).spec_constants.at(0) == 32);  // 24 chunks a row
  ::setenv("OCTO_GEMV_HALVES", "3", 1);
  CHECK_THROWS_AS(plan_decode_gemv(3584, 18944, dtype::q4_k, true, 2), octo::error);
  ::unsetenv("OCTO_GEMV_HALVES");
  ::setenv("OCTO_GEMV_NR_SWIGLU", "4", 1);
  CHECK(nr_swiglu(4864, 896, dtype::q8_0) == 4);
  CHECK(nr(37888, 3584, dtype::q8_0, 2) == 8);     // the other wide outputs keep their rule
  ::unsetenv("OCTO_GEMV_NR_SWIGLU");
  ::setenv("OCTO_GEMV_NR_LONG", "8", 1);
  CHECK(nr(3584, 18944, dtype::q6_k, 2) == 8);
  CHECK(nr(3584, 3584, dtype::q4_k, 2) == 2);
  ::unsetenv("OCTO_GEMV_NR_LONG");
  ::setenv("OCTO_GEMV_NR_NARROW", "4", 1);  // the narrow outputs' 2, not the long rows' 4 nor the wide ones
  CHECK(nr(3584, 3584, dtype::q4_k, 2) == 4);
  CHECK(nr(1536, 1536, dtype::q8_0, 2) == 4);
  CHECK(nr(3584, 18944, dtype::q6_k, 2) == 4);
  CHECK(nr(37888, 3584, dtype::q4_k, 2) == 8);
  ::setenv("OCTO_GEMV_NR_NARROW", "3", 1);
  CHECK_THROWS_WITH_AS(nr(3584, 3584, dtype::q4_k, 2), doctest::Contains("OCTO_GEMV_NR_NARROW='3' is not a power of two"), octo::error);
  ::unsetenv("OCTO_GEMV_NR_NARROW");
  ::setenv("OCTO_GEMV_IDOT", "1", 1);  // wherever the instruction exists
  CHECK(plan_decode_gemv(3584, 3584, dtype::q4_k, true, 1).shader == "gemv_idot_q4_k");
  CHECK(plan_decode_gemv(3584, 3584, dtype::q4_k, false, 1).shader == "gemv_q4_k");  // still only at fast
  ::setenv("OCTO_GEMV_IDOT", "0", 1);  // never
  CHECK(plan_decode_gemv(3584, 3584, dtype::q4_k, true, 2).shader == "gemv_q4_k");
  ::setenv("OCTO_GEMV_IDOT", "yes", 1);
  CHECK_THROWS_WITH_AS(plan_decode_gemv(3584, 3584, dtype::q4_k, true, 2), doctest::Contains("OCTO_GEMV_IDOT='yes' is not 0 or 1"),
                       octo::error);
  ::unsetenv("OCTO_GEMV_IDOT");
}

TEST_CASE("integer-dot decode GEMVs: x rounded once ahead of the RMSNORM-fused ones over rows of 1536 or more or an LM head's outputs, else as OCTO_GEMV_X8 says") {
  clear_kernel_environment();
  // task_variants' RMSNORM_GEMV (K = 256) and a plain GEMV, planned on an accelerating device at `fast`
  // with a shared scratch; spec constant 6 is gemv.comp's X8.
  auto idot_device = device(true);
  idot_device.int_dot = idot_device.int_dot_accelerated = true;
  const auto plan_op = [&](opcode op, std::uint64_t scratch) {
    for (const auto& prog : task_variants()) {
      const auto& t = prog.tasks.at(0);
      if (t.op != op || t.label.str().find("Q4_K") == std::string::npos) continue;
      std::vector<std::uint64_t> addresses(prog.buffers.size());
      for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000 * (b + 1);
      vm::vulkan::task_context c{prog, t, addresses, 0xf0000, idot_device, true};
      c.shared_scratch_address = scratch;
      return vm::vulkan::kernel_for(op).planner(c);
    }
    FAIL("no Q4_K variant of " << ir::name(op));
    return vm::vulkan::kernel_launch{};
  };
  auto l = plan_op(opcode::rmsnorm_gemv, 0x900000);
  CHECK(l.shader == "gemv_idot_q4_k");
  CHECK(l.before.empty());  // by default not over rows of 256
  CHECK(l.shared_scratch_bytes == 0);
  CHECK(l.spec_constants.at(6) == 0);
  // The default rule at the rows it is drawn from (benchmarks/results/2026-11-29-h200-xq, call7): the 0.5B's 896
  // no, the 1.5B's 1536 and the 7B's 3584 yes, RMSNORM-fused only.
  const auto plan_k = [&](opcode op, std::int64_t k, std::int64_t n = 512) {
    const octo::test::tensor_spec x{"x", {1, k}}, nw{"norm_w", {k}, dtype::f32, ir::buffer_kind::weight},
        wt{"w", {n, k}, dtype::q8_0, ir::buffer_kind::weight}, r{"r", {1, n}};
    ir::param_list p;
    p.set(param_key::K, k).set(param_key::N_tile, n).set(param_key::n_off, 0);
    if (op == opcode::rmsnorm_gemv) p.set(param_key::hidden, k).set_real(param_key::eps, 1e-6);
    auto prog = op == opcode::rmsnorm_gemv ? single_task(op, {x, nw, wt}, {"y", {1, n}}, p)
                                           : single_task(op, {x, wt, r}, {"y", {1, n}}, p);
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000 * (b + 1);
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, idot_device, true};
    c.shared_scratch_address = 0x900000;
    return vm::vulkan::kernel_for(op).planner(c);
  };
  CHECK(plan_k(opcode::rmsnorm_gemv, 896).before.empty());
  CHECK(plan_k(opcode::rmsnorm_gemv, 1536).before.size() == 1);
  CHECK(plan_k(opcode::rmsnorm_gemv, 3584).spec_constants.at(6) == 1);
  CHECK(plan_k(opcode::gemv_add, 3584).before.empty());
  // Shorter rows where the output is an LM head's (2026-11-29-h200-head, call1): 32768 columns and more.
  CHECK(plan_k(opcode::rmsnorm_gemv, 896, 32768).before.size() == 1);
  CHECK(plan_k(opcode::rmsnorm_gemv, 896, 32767).before.empty());
  CHECK(plan_k(opcode::gemv_add, 896, 151936).before.empty());
  ::setenv("OCTO_GEMV_X8", "0", 1);
  CHECK(plan_k(opcode::rmsnorm_gemv, 3584).before.empty());
  ::setenv("OCTO_GEMV_X8", "1", 1);
  l = plan_op(opcode::rmsnorm_gemv, 0);  // the first call: the scratch it needs, no launch yet
  CHECK(l.shared_scratch_bytes == 256 / 16 * 32);  // quants; step, sum and sum of squares a run
  CHECK(l.before.empty());
  l = plan_op(opcode::rmsnorm_gemv, 0x900000);
  REQUIRE(l.before.size() == 1);
  CHECK(l.before[0].shader == "gemv_quantize_x");
  CHECK(l.before[0].spec_constants.at(1) == 1);  // the norm goes into the runs
  CHECK(l.spec_constants.at(6) == 1);
  CHECK(plan_op(opcode::gemv_add, 0x900000).before.empty());  // level 1: the RMSNORM-fused ones only
  ::setenv("OCTO_GEMV_X8", "2", 1);
  l = plan_op(opcode::gemv_add, 0x900000);
  REQUIRE(l.before.size() == 1);
  CHECK(l.before[0].spec_constants.at(1) == 0);
  CHECK(plan_op(opcode::rmsnorm_gemv, 0x900008).before.empty());  // a scratch not 16-byte aligned
  ::setenv("OCTO_GEMV_X8", "yes", 1);
  CHECK_THROWS_WITH_AS(plan_op(opcode::gemv_add, 0x900000), doctest::Contains("OCTO_GEMV_X8='yes' is not 0, 1 or 2"), octo::error);
  ::unsetenv("OCTO_GEMV_X8");
}

TEST_CASE("integer-dot decode GEMVs: a GEMV_ADD rounds its row for the RMSNORM-fused GEMVs that read it") {
  clear_kernel_environment();
  // h = r + Wo x (GEMV_ADD, task 0) read by two RMSNORM-fused GEMVs (tasks 1 and 2), on an accelerating
  // device at `fast`. gemv.comp's spec constants: 0 the workgroup width, 1 NR, 6 X8, 7 ROUND, 8 LANES.
  auto idot_device = device(true);
  idot_device.int_dot = idot_device.int_dot_accelerated = true;
  const std::int64_t H = 1536, Kin = 1536, N = 256;
  const auto make = [&](std::int64_t H) {
    ir::program prog;
    const auto buf = [&](const char* name, ir::buffer_kind kind, dtype dt, std::vector<std::int64_t> shape) {
      return prog.add_buffer(name, kind, dt, shape);
    };
    const auto x = buf("x", ir::buffer_kind::io_input, dtype::f32, {1, Kin});
    const auto wo = buf("wo", ir::buffer_kind::weight, dtype::q8_0, {H, Kin});
    const auto r = buf("r", ir::buffer_kind::io_input, dtype::f32, {1, H});
    const auto h = buf("h", ir::buffer_kind::io_output, dtype::f32, {1, H});
    const auto nw = buf("nw", ir::buffer_kind::weight, dtype::f32, {H});
    buf("nw2", ir::buffer_kind::weight, dtype::f32, {H});
    const auto w1 = buf("w1", ir::buffer_kind::weight, dtype::q8_0, {N, H});
    const auto w2 = buf("w2", ir::buffer_kind::weight, dtype::q8_0, {N, H});
    const auto y1 = buf("y1", ir::buffer_kind::io_output, dtype::f32, {1, N});
    const auto y2 = buf("y2", ir::buffer_kind::io_output, dtype::f32, {1, N});
    const auto add_task = [&](opcode op, std::vector<std::int32_t> in, std::int32_t out, ir::param_list p) {
      add_one_output_task(prog, op, std::move(in), out, std::move(p));
    };
    ir::param_list pa;
    pa.set(param_key::K, Kin).set(param_key::N_tile, H).set(param_key::n_off, 0);
    add_task(opcode::gemv_add, {x, wo, r}, h, pa);
    ir::param_list pn;
    pn.set(param_key::K, H).set(param_key::N_tile, N).set(param_key::n_off, 0).set(param_key::hidden, H).set_real(param_key::eps, 1e-6);
    add_task(opcode::rmsnorm_gemv, {h, nw, w1}, y1, pn);
    add_task(opcode::rmsnorm_gemv, {h, nw, w2}, y2, pn);
    return prog;
  };
  ir::program prog = make(H);
  const std::int32_t nw = 4, nw2 = 5;  // buffer ids (make's order)
  std::vector<std::uint64_t> addresses(prog.buffers.size());
  for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x100000 * (b + 1);
  std::vector<std::uint64_t> task_scratch(prog.tasks.size(), 0);
  const auto plan_in = [&](const ir::program& p, std::size_t task, std::uint64_t scratch, bool shown) {
    vm::vulkan::task_context c{p, p.tasks.at(task), addresses, 0xf0000, idot_device, true};
    c.scratch_address = scratch;
    c.shared_scratch_address = 0x9000000;
    if (shown) c.task_scratch_address = task_scratch;
    return vm::vulkan::kernel_for(p.tasks.at(task).op).planner(c);
  };
  const auto plan = [&](std::size_t task, std::uint64_t scratch, bool shown = true) {
    return plan_in(prog, task, scratch, shown);
  };
  // The writer: first the scratch it needs (the runs), then, with it, ROUND over 16-column workgroups.
  auto w = plan(0, 0);
  CHECK(w.shader == "gemv_idot_q8_0");
  CHECK(w.scratch_bytes == H / 16 * 32);
  CHECK(w.spec_constants.at(7) == 0);
  w = plan(0, 0x8000000);
  REQUIRE(w.spec_constants.size() == 10);
  CHECK(w.spec_constants.at(7) == 1);
  // 96 workgroups (at most 128: under a wave of 132 SMs): 4 lanes of 256 invocations over 4 columns.
  CHECK(w.spec_constants.at(1) == 4);
  CHECK(w.spec_constants.at(8) == 4);
  CHECK(w.spec_constants.at(0) == 1024);
  CHECK(w.groups[0] * w.groups[2] == H / 16);
  CHECK(w.before.empty());
  // OCTO_GEMV_NR_ROUND / OCTO_GEMV_WG_ROUND force a lane's columns and width.
  ::setenv("OCTO_GEMV_NR_ROUND", "2", 1);
  ::setenv("OCTO_GEMV_WG_ROUND", "64", 1);
  w = plan(0, 0x8000000);
  CHECK(w.spec_constants.at(1) == 2);
  CHECK(w.spec_constants.at(8) == 8);
  CHECK(w.spec_constants.at(0) == 512);
  CHECK(w.groups[0] * w.groups[2] == H / 16);
  ::setenv("OCTO_GEMV_NR_ROUND", "3", 1);
  CHECK_THROWS_WITH_AS(plan(0, 0x8000000), doctest::Contains("OCTO_GEMV_NR_ROUND='3' is not a power of two"), octo::error);
  ::unsetenv("OCTO_GEMV_NR_ROUND");
  ::unsetenv("OCTO_GEMV_WG_ROUND");
  // A forced OCTO_GEMV_NR keeps the GEMV's own shape: 8 lanes of its 2 columns at its width.
  ::setenv("OCTO_GEMV_NR", "2", 1);
  w = plan(0, 0x8000000);
  CHECK(w.spec_constants.at(1) == 2);
  CHECK(w.spec_constants.at(8) == 8);
  CHECK(w.spec_constants.at(0) == 8 * plan(0, 0x8000000, false).spec_constants.at(0));
  ::unsetenv("OCTO_GEMV_NR");
  {  // More than 128 workgroups (rows of 4096: 256): each lane keeps the columns and width it had.
    const ir::program wide = make(4096);
    const auto lw = plan_in(wide, 0, 0x8000000, true), own = plan_in(wide, 0, 0x8000000, false);
    REQUIRE(lw.spec_constants.size() == 10);
    CHECK(lw.spec_constants.at(7) == 1);
    const auto nr = lw.spec_constants.at(1), lanes = lw.spec_constants.at(8);
    CHECK(nr * lanes == 16);
    CHECK(nr == own.spec_constants.at(1));
    CHECK(lw.spec_constants.at(0) == lanes * own.spec_constants.at(0));
    CHECK(lw.groups[0] * lw.groups[2] == 4096 / 16);
  }
  // The readers: the runs from the writer's scratch, no launch ahead.
  task_scratch[0] = 0x8000000;
  for (std::size_t t : {1u, 2u}) {
    const auto rl = plan(t, 0);
    CHECK(rl.spec_constants.at(6) == 1);
    CHECK(rl.before.empty());
    CHECK(rl.shared_scratch_bytes == 0);
  }
  task_scratch[0] = 0;
  // Not where the VM does not show a task's scratch to later ones (a planner alone, control words), nor
  // with OCTO_GEMV_X8_WRITER=0 or OCTO_GEMV_X8=0: the readers then round as the rules above say.
  CHECK(plan(0, 0, false).scratch_bytes == 0);
  ::setenv("OCTO_GEMV_X8_WRITER", "0", 1);
  CHECK(plan(0, 0).scratch_bytes == 0);
  ::setenv("OCTO_GEMV_X8_WRITER", "yes", 1);
  CHECK_THROWS_WITH_AS(plan(0, 0), doctest::Contains("OCTO_GEMV_X8_WRITER='yes' is not 0 or 1"), octo::error);
  ::setenv("OCTO_GEMV_X8_WRITER", "1", 1);
  CHECK(plan(0, 0).scratch_bytes == H / 16 * 32);
  ::setenv("OCTO_GEMV_X8", "0", 1);
  CHECK(plan(0, 0).scratch_bytes == 0);
  ::unsetenv("OCTO_GEMV_X8");
  ::unsetenv("OCTO_GEMV_X8_WRITER");
  CHECK(plan(1, 0).before.size() == 1);  // no writer's runs: rows of 1536 take the launch ahead
  // Readers that do not share one norm: the writer does not round.
  prog.tasks.at(2).inputs.at(1) = nw2;
  CHECK(plan(0, 0).scratch_bytes == 0);
  prog.tasks.at(2).inputs.at(1) = nw;
  // A lane must be whole subgroups: 128-wide subgroups and 64-wide lanes (the 1.5B's Q8_0 rows of 1536
  // take 64 where the lanes keep the GEMV's width) leave the writer as it was; lanes of 256 are whole.
  idot_device.subgroup_size = 128;
  CHECK(plan(0, 0).scratch_bytes == H / 16 * 32);
  ::setenv("OCTO_GEMV_WG_ROUND", "64", 1);
  CHECK(plan(0, 0).scratch_bytes == 0);
  ::unsetenv("OCTO_GEMV_WG_ROUND");
  idot_device.subgroup_size = 32;
  // Rows under 1536 (the 0.5B's 896: 56 workgroups of 16 columns) only where OCTO_GEMV_X8 asks for x
  // rounded ahead.
  prog = make(896);
  CHECK(plan(0, 0).scratch_bytes == 0);
  ::setenv("OCTO_GEMV_X8", "1", 1);
  CHECK(plan(0, 0).scratch_bytes == 896 / 16 * 32);
  ::unsetenv("OCTO_GEMV_X8");
}

TEST_CASE("integer-dot decode GEMVs: an RMSNORM_SWIGLU rounds its row for the down projection that reads it") {
  clear_kernel_environment();
  // a = silu(Wg n(x)) * Wu n(x) (RMSNORM_SWIGLU, task 0) read by the down projection d = r + Wd a
  // (GEMV_ADD, task 1), on an accelerating device at `fast`. gemv.comp's spec constants: 0 the
  // workgroup width, 1 NR, 5 FUSE, 6 X8, 7 ROUND, 8 LANES.
  auto idot_device = device(true);
  idot_device.int_dot = idot_device.int_dot_accelerated = true;
  const auto make = [&](std::int64_t H, std::int64_t F, dtype wd) {
    ir::program prog;
    const auto buf = [&](const char* name, ir::buffer_kind kind, dtype dt, std::vector<std::int64_t> shape) {
      return prog.add_buffer(name, kind, dt, shape);
    };
    const auto x = buf("x", ir::buffer_kind::io_input, dtype::f32, {1, H});
    const auto nw = buf("nw", ir::buffer_kind::weight, dtype::f32, {H});
    const auto wg = buf("wg", ir::buffer_kind::weight, wd, {F, H});
    const auto wu = buf("wu", ir::buffer_kind::weight, wd, {F, H});
    const auto a = buf("a", ir::buffer_kind::io_output, dtype::f32, {1, F});
    const auto wdn = buf("wd", ir::buffer_kind::weight, wd, {H, F});
    const auto r = buf("r", ir::buffer_kind::io_input, dtype::f32, {1, H});
    const auto y = buf("y", ir::buffer_kind::io_output, dtype::f32, {1, H});
    const auto add_task = [&](opcode op, std::vector<std::int32_t> in, std::int32_t out, ir::param_list p) {
      add_one_output_task(prog, op, std::move(in), out, std::move(p));
    };
    ir::param_list ps;
    ps.set(param_key::K, H).set(param_key::N_tile, F).set(param_key::n_off, 0).set(param_key::hidden, H).set_real(param_key::eps, 1e-6);
    add_task(opcode::rmsnorm_swiglu, {x, nw, wg, wu}, a, ps);
    ir::param_list pd;
    pd.set(param_key::K, F).set(param_key::N_tile, H).set(param_key::n_off, 0);
    add_task(opcode::gemv_add, {a, wdn, r}, y, pd);
    return prog;
  };
  for (const std::int64_t H : {1536, 3584}) {
    CAPTURE(H);
    const std::int64_t F = H == 1536 ? 8960 : 18944;
    const ir::program prog = make(H, F, dtype::q4_k);
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000000 * (b + 1);
    std::vector<std::uint64_t> task_scratch(prog.tasks.size(), 0);
    const auto plan = [&](std::size_t task, std::uint64_t scratch, bool shown = true) {
      vm::vulkan::task_context c{prog, prog.tasks.at(task), addresses, 0xf0000, idot_device, true};
      c.scratch_address = scratch;
      c.shared_scratch_address = 0x9000000;
      if (shown) c.task_scratch_address = task_scratch;
      return vm::vulkan::kernel_for(prog.tasks.at(task).op).planner(c);
    };
    // Without the scratch shown (a planner alone, control words) it stays the plain SWIGLU.
    const auto own = plan(0, 0, false);
    CHECK(own.shader == "gemv_idot_q4_k");
    CHECK(own.scratch_bytes == 0);
    // The writer asks for the runs' scratch, then with it rounds over workgroups of 16 outputs: lanes of
    // NR / 2 outputs, each as wide as the GEMV (rows of 1536) or one subgroup (rows of 3584).
    CHECK(plan(0, 0).scratch_bytes == std::uint64_t(F) / 16 * 32);
    auto w = plan(0, 0x8000000);
    REQUIRE(w.spec_constants.size() == 10);
    CHECK(w.spec_constants.at(5) == 3);
    CHECK(w.spec_constants.at(7) == 1);
    const auto nr = w.spec_constants.at(1), lanes = w.spec_constants.at(8);
    CHECK(nr == own.spec_constants.at(1));
    CHECK(nr / 2 * lanes == 16);
    const std::uint32_t lane_w = H == 3584 ? 32u : own.spec_constants.at(0);
    CHECK(w.spec_constants.at(0) == lanes * lane_w);
    CHECK(w.groups[0] * w.groups[2] == F / 16);
    // OCTO_GEMV_WG_SWIGLU forces the lanes' width.
    ::setenv("OCTO_GEMV_WG_SWIGLU", "64", 1);
    CHECK(plan(0, 0x8000000).spec_constants.at(0) == lanes * 64);
    ::setenv("OCTO_GEMV_WG_SWIGLU", "48", 1);
    CHECK_THROWS_WITH_AS(plan(0, 0x8000000), doctest::Contains("OCTO_GEMV_WG_SWIGLU='48' is not a power of two"), octo::error);
    ::unsetenv("OCTO_GEMV_WG_SWIGLU");
    // The down projection reads the runs (X8) from the writer's scratch, no launch ahead; without them it
    // rounds x itself.
    CHECK(plan(1, 0).spec_constants.at(6) == 0);
    task_scratch[0] = 0x8000000;
    const auto d = plan(1, 0);
    CHECK(d.spec_constants.at(6) == 1);
    CHECK(d.before.empty());
    task_scratch[0] = 0;
    // OCTO_GEMV_SWIGLU_ROUND=0 (or OCTO_GEMV_X8_WRITER=0, OCTO_GEMV_X8=0): no rounding writer.
    ::setenv("OCTO_GEMV_SWIGLU_ROUND", "0", 1);
    CHECK(plan(0, 0).scratch_bytes == 0);
    ::setenv("OCTO_GEMV_SWIGLU_ROUND", "on", 1);
    CHECK_THROWS_WITH_AS(plan(0, 0), doctest::Contains("OCTO_GEMV_SWIGLU_ROUND='on' is not 0 or 1"), octo::error);
    ::unsetenv("OCTO_GEMV_SWIGLU_ROUND");
    ::setenv("OCTO_GEMV_X8_WRITER", "0", 1);
    CHECK(plan(0, 0).scratch_bytes == 0);
    ::unsetenv("OCTO_GEMV_X8_WRITER");
  }
  // Rows of more than 128 chunks (Q8_0's 16-element chunks over K = 3584: 224) are not rounded by the
  // SWIGLU, unless OCTO_GEMV_SWIGLU_ROUND=1 (benchmarks/results/2026-12-04-h200-q8-swiglu, call1); Q8_0
  // over K = 1536 (96 chunks) is.
  for (const std::int64_t H : {1536, 3584}) {
    CAPTURE(H);
    const std::int64_t F = H == 1536 ? 8960 : 18944;
    const ir::program prog = make(H, F, dtype::q8_0);
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000000 * (b + 1);
    std::vector<std::uint64_t> task_scratch(prog.tasks.size(), 0);
    const auto scratch_asked = [&] {
      vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, idot_device, true};
      c.task_scratch_address = task_scratch;
      const auto l = vm::vulkan::kernel_for(opcode::rmsnorm_swiglu).planner(c);
      CHECK(l.shader == "gemv_idot_q8_0");
      return l.scratch_bytes;
    };
    const std::uint64_t runs = std::uint64_t(F) / 16 * 32;
    CHECK(scratch_asked() == (H == 1536 ? runs : 0));
    ::setenv("OCTO_GEMV_SWIGLU_ROUND", "1", 1);
    CHECK(scratch_asked() == runs);
    ::setenv("OCTO_GEMV_SWIGLU_ROUND", "0", 1);
    CHECK(scratch_asked() == 0);
    ::unsetenv("OCTO_GEMV_SWIGLU_ROUND");
  }
  // A reader that would not take the runs (the down projection on the float loops: F32 weights) leaves
  // the SWIGLU plain; so does a GEMV_ADD's row for a plain reader (takes_runs_of).
  {
    ir::program prog = make(1536, 8960, dtype::q4_k);
    prog.buffers.at(5).dtype = dtype::f32;
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000000 * (b + 1);
    std::vector<std::uint64_t> task_scratch(prog.tasks.size(), 0);
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, idot_device, true};
    c.task_scratch_address = task_scratch;
    CHECK(vm::vulkan::kernel_for(prog.tasks.at(0).op).planner(c).scratch_bytes == 0);
  }
}

TEST_CASE("Qwen3's q and k in one task (RMSNORM_GEMV_NORM_ROPE / _KV): pairs within a head, the scratch") {
  clear_kernel_environment();
  // gemv.comp's FUSE 6 / 7 (HEAD_NORM): a workgroup's NR / 2 RoPE pairs lie in one head, so NR is halved
  // until NR / 2 divides head_dim / 2; the scratch holds the (row, head) counters (a multiple of 4) and
  // the rows' sums. The head norm weight rides in the bias fields.
  const auto plan = [](std::int64_t heads, std::int64_t hd, dtype w, const char* nr) {
    ::setenv("OCTO_GEMV_NR", nr, 1);
    ir::param_list p;
    p.set(param_key::K, 256).set(param_key::hidden, 256).set_real(param_key::eps, 1e-6).set(param_key::head_dim, hd);
    p.set(param_key::n_rot, hd).set_real(param_key::theta, 1e6);
    const octo::test::tensor_spec x{"x", {1, 256}}, nw{"norm_w", {256}, dtype::f32, ir::buffer_kind::weight},
        wt{"w", {heads * hd, 256}, w, ir::buffer_kind::weight}, hw{"head_w", {hd}, dtype::f16, ir::buffer_kind::weight},
        pos{"pos", {1}, dtype::i32};
    auto prog = single_task(opcode::rmsnorm_gemv_norm_rope, {x, nw, wt, hw, pos}, {"y", {1, heads * hd}}, p);
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000000 * (b + 1);
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, device(true), false};
    c.scratch_address = 0x9000000;
    auto l = vm::vulkan::kernel_for(opcode::rmsnorm_gemv_norm_rope).planner(c);
    ::unsetenv("OCTO_GEMV_NR");
    return l;
  };
  for (dtype w : {dtype::f16, dtype::q8_0, dtype::q4_k}) {
    CAPTURE(ir::name(w));
    const auto a = plan(3, 128, w, "8");
    CHECK(a.spec_constants.at(5) == 6);  // FUSE_NORM_ROPE
    CHECK(a.spec_constants.at(1) == 8);  // 4 pairs divide 64
    CHECK(a.scratch_bytes == 4 * (4 + 3 * 128));  // 3 counters rounded to 4, one row of 384 sums
    const auto b = plan(5, 100, w, "8");  // 50 pairs a head: 4 do not divide them, 2 do
    CHECK(b.spec_constants.at(1) == 4);
    CHECK(b.groups[0] * b.groups[1] * b.groups[2] == 5 * 50 / 2);
    CHECK(plan(7, 6, w, "16").spec_constants.at(1) == 2);  // 3 pairs a head: one pair a workgroup
  }
}

TEST_CASE("decode GEMV rows: the RMSNORM-fused integer GEMVs that round x themselves take 4 where 256 workgroups remain") {
  clear_kernel_environment();
  // Spec constant 1 (NR) of an RMSNORM_GEMV or RMSNORM_GEMV_NORM_ROPE over one x row at `fast` on a device
  // accelerating int8 dot products (benchmarks/results/2026-12-07-h100-narrow, calls 2 and 3).
  const auto nr = [](opcode op, std::int64_t n, std::int64_t k, dtype w, std::int64_t hd = 128) {
    ir::param_list p;
    p.set(param_key::K, k).set(param_key::hidden, k).set_real(param_key::eps, 1e-6);
    const octo::test::tensor_spec x{"x", {1, k}}, nw{"norm_w", {k}, dtype::f32, ir::buffer_kind::weight},
        wt{"w", {n, k}, w, ir::buffer_kind::weight}, hw{"head_w", {hd}, dtype::f32, ir::buffer_kind::weight},
        pos{"pos", {1}, dtype::i32};
    ir::program prog;
    if (op == opcode::rmsnorm_gemv) {
      p.set(param_key::N_tile, n).set(param_key::n_off, 0);
      prog = single_task(op, {x, nw, wt}, {"y", {1, n}}, p);
    } else {
      p.set(param_key::head_dim, hd).set(param_key::n_rot, hd).set_real(param_key::theta, 1e6);
      prog = single_task(op, {x, nw, wt, hw, pos}, {"y", {1, n}}, p);
    }
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000000 * (b + 1);
    auto d = device(true);
    d.int_dot = d.int_dot_accelerated = true;
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, d, true};
    c.scratch_address = 0x9000000;
    const auto l = vm::vulkan::kernel_for(op).planner(c);
    REQUIRE(l.shader.rfind("gemv_idot_", 0) == 0);
    return l.spec_constants.at(1);
  };
  for (dtype w : {dtype::q8_0, dtype::q4_k}) {
    CAPTURE(ir::name(w));
    CHECK(nr(opcode::rmsnorm_gemv, 1024, 1024, w) == 4);             // Qwen3-0.6B's v: 256 workgroups at 4
    CHECK(nr(opcode::rmsnorm_gemv_norm_rope, 2048, 1024, w) == 4);   // its q: 512 (two pairs each)
    CHECK(nr(opcode::rmsnorm_gemv_norm_rope, 1024, 1024, w) == 4);   // its k: 256
    CHECK(nr(opcode::rmsnorm_gemv_norm_rope, 896, 1024, w, 64) == 2);  // 224 at 4: keep 2
    CHECK(nr(opcode::rmsnorm_gemv, 512, 1024, w) == 2);              // 128 at 4
    CHECK(nr(opcode::rmsnorm_gemv, 2048, 2048, w) == 2);             // x rounded ahead (K >= 1536): 2
    CHECK(nr(opcode::rmsnorm_gemv_norm_rope, 2048, 2048, w) == 2);
    ::setenv("OCTO_GEMV_X8", "0", 1);                                // nothing rounded ahead: every row rounds
    CHECK(nr(opcode::rmsnorm_gemv, 2048, 2048, w) == 4);
    ::unsetenv("OCTO_GEMV_X8");
    ::setenv("OCTO_GEMV_NR_NARROW", "2", 1);                         // the narrow outputs' knob wins
    CHECK(nr(opcode::rmsnorm_gemv, 1024, 1024, w) == 2);
    CHECK(nr(opcode::rmsnorm_gemv_norm_rope, 2048, 1024, w) == 2);
    ::unsetenv("OCTO_GEMV_NR_NARROW");
  }
  CHECK(plan_decode_gemv(1024, 1024, dtype::q8_0, true, 2).spec_constants.at(1) == 2);  // no norm: 2
}

TEST_CASE("decode GEMV workgroup width: a row's chunks rounded down to a power of two, 64 for 56-63 chunks") {
  clear_kernel_environment();
  // Spec constant 0 is shaders/gemv.comp's workgroup width (benchmarks/results/2026-11-28-h100-idot, call4).
  const auto wg = [](std::int64_t n, std::int64_t k, dtype w) { return plan_decode_gemv(n, k, w).spec_constants.at(0); };
  CHECK(wg(896, 896, dtype::q8_0) == 64);      // 0.5B: 56 chunks
  CHECK(wg(152064, 3584, dtype::q6_k) == 64);  // the 7B's Q6_K LM head: 56 chunks
  CHECK(wg(1536, 1536, dtype::q4_k) == 32);    // 1.5B: 48 chunks stay one warp
  CHECK(wg(1536, 1536, dtype::q6_k) == 32);    // 24 chunks
  CHECK(wg(3584, 3584, dtype::q4_k) == 64);    // 112 chunks (128 wide lost 5% at 7B Q4_K_M)
  CHECK(wg(3584, 3584, dtype::q8_0) == 128);   // 224 chunks
  CHECK(wg(3584, 18944, dtype::q4_k) == 128);
  ::setenv("OCTO_GEMV_WG", "32", 1);           // the knob still wins
  CHECK(wg(896, 896, dtype::q8_0) == 32);
  ::unsetenv("OCTO_GEMV_WG");
}

TEST_CASE("decode GEMVs on a CPU device: 16 rows a workgroup of 32, unless OCTO_GEMV_PLAN=gpu") {
  clear_kernel_environment();
  // (workgroup width, rows a workgroup) of an n x k GEMV over one x row, on a CPU device or a GPU.
  const auto shape = [](std::int64_t n, std::int64_t k, dtype w, bool cpu) {
    ir::param_list p;
    p.set(param_key::K, k).set(param_key::N_tile, n).set(param_key::n_off, 0);
    const auto prog =
        single_task(opcode::gemv_tile, {{"x", {1, k}}, {"w", {n, k}, w, ir::buffer_kind::weight}}, {"y", {1, n}}, p);
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x10000 * (b + 1);
    auto d = device(true);
    d.cpu = cpu;
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, d, false};
    const auto l = vm::vulkan::kernel_for(opcode::gemv_tile).planner(c);
    return std::pair{l.spec_constants.at(0), l.spec_constants.at(1)};
  };
  using ws = std::pair<std::uint32_t, std::uint32_t>;
  for (dtype w : {dtype::q8_0, dtype::q4_k, dtype::f16, dtype::f32}) {
    CAPTURE(w);
    CHECK(shape(1536, 1536, w, true) == ws{32, 16});
    CHECK(shape(8960, 1536, w, true) == ws{32, 16});
    CHECK(shape(1536, 1536, w, false) != ws{32, 16});  // a GPU keeps its own plan
  }
  CHECK(shape(896, 896, dtype::q8_0, false) == ws{64, 2});
  ::setenv("OCTO_GEMV_PLAN", "gpu", 1);  // the GPU plan on a CPU device (the conformance tests)
  CHECK(shape(896, 896, dtype::q8_0, true) == ws{64, 2});
  ::setenv("OCTO_GEMV_PLAN", "cpu", 1);  // the CPU plan anywhere
  CHECK(shape(896, 896, dtype::q8_0, false) == ws{32, 16});
  ::setenv("OCTO_GEMV_PLAN", "fast", 1);
  CHECK_THROWS_WITH_AS(shape(896, 896, dtype::q8_0, true), doctest::Contains("OCTO_GEMV_PLAN='fast' is not gpu or cpu"),
                       octo::error);
  ::unsetenv("OCTO_GEMV_PLAN");
  ::setenv("OCTO_GEMV_NR", "4", 1);  // the knobs still win
  CHECK(shape(896, 896, dtype::q8_0, true).second == 4u);
  ::unsetenv("OCTO_GEMV_NR");
}

TEST_CASE("RMSNORM_GEMV_QKV: one launch of the _qkv form over the three grids, or three side by side") {
  clear_kernel_environment();
  auto idot_device = device(true);
  idot_device.int_dot = idot_device.int_dot_accelerated = true;
  // Qwen2.5-1.5B's shapes: q 1536, k and v 256 over K = 1536 (x rounded ahead), heads of 128, a bias.
  const auto plan = [&](dtype w, dtype wv, bool fast, std::uint64_t shared_scratch = 0x900000) {
    ir::param_list p;
    p.set(param_key::K, 1536).set(param_key::hidden, 1536).set_real(param_key::eps, 1e-6);
    p.set(param_key::head_dim, 128).set(param_key::n_rot, 128).set_real(param_key::theta, 1e6).set(param_key::pos, 0);
    auto prog = octo::test::qkv_task(w, dtype::f16, true, 1536, 1536, 256, 64, p);
    prog.buffers[static_cast<std::size_t>(prog.tasks[0].inputs[4])].dtype = wv;
    std::vector<std::uint64_t> addresses(prog.buffers.size());
    for (std::size_t b = 0; b < addresses.size(); ++b) addresses[b] = 0x100000 * (b + 1);
    vm::vulkan::task_context c{prog, prog.tasks.at(0), addresses, 0xf0000, idot_device, fast};
    c.shared_scratch_address = shared_scratch;
    return vm::vulkan::kernel_for(opcode::rmsnorm_gemv_qkv).planner(c);
  };
  // One format: one launch, the q, k and v grids one after another (pairs of 1 a workgroup: 768 + 128 + 128),
  // x rounded once ahead of it on the integer loops.
  const auto one = plan(dtype::q8_0, dtype::q8_0, true);
  CHECK(one.shader == "gemv_idot_q8_0_qkv");
  CHECK(one.beside.empty());
  CHECK(one.groups[0] == 768 + 128 + 128);
  CHECK(one.spec_constants.at(5) == 4);
  CHECK(one.before.size() == 1);
  CHECK(one.push_constants.bytes.size() == 128);  // lavapipe's limit, exactly
  CHECK(plan(dtype::f16, dtype::f16, false).shader == "gemv_f16_qkv");
  // The 256-element formats take three launches by default (measured on Q4_K: kernels/gemv.cpp
  // qkv_one_launch), one with OCTO_GEMV_QKV=1.
  CHECK(plan(dtype::q4_k, dtype::q4_k, true).beside.size() == 2);
  ::setenv("OCTO_GEMV_QKV", "1", 1);
  CHECK(plan(dtype::q4_k, dtype::q4_k, false).shader == "gemv_q4_k_qkv");
  CHECK(plan(dtype::q4_k, dtype::q4_k, true).shader == "gemv_idot_q4_k_qkv");
  // A Q4_K_M layer's Q6_K v: three launches, the rounding ahead once (both formats take it).
  const auto mixed = plan(dtype::q4_k, dtype::q6_k, true);
  CHECK(mixed.shader == "gemv_idot_q4_k");
  REQUIRE(mixed.beside.size() == 2);
  CHECK(mixed.beside[1].shader == "gemv_idot_q6_k");
  CHECK(mixed.before.size() == 1);
  CHECK(mixed.beside[0].before.empty());
  // Formats with and without integer loops (F16 v): no rounding ahead for any of them.
  const auto apart = plan(dtype::q4_k, dtype::f16, true);
  REQUIRE(apart.beside.size() == 2);
  CHECK(apart.before.empty());
  CHECK(apart.beside[1].shader == "gemv_f16");
  ::unsetenv("OCTO_GEMV_QKV");
  // On request, and without subgroup arithmetic: three launches.
  ::setenv("OCTO_GEMV_QKV", "0", 1);
  CHECK(plan(dtype::q8_0, dtype::q8_0, true).beside.size() == 2);
  ::unsetenv("OCTO_GEMV_QKV");
  idot_device.subgroup_arithmetic = false;
  CHECK(plan(dtype::q8_0, dtype::q8_0, false).beside.size() == 2);
}
