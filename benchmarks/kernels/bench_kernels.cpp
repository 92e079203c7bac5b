// Decode-step kernels other than the weight GEMVs, one opcode at a time, at the shapes one decode token of
// a Qwen2.5 model runs (one row): ATTENTION_TILE over kv_len cached positions, RMSNORM, ROPE, KV_APPEND,
// ADD, SILU_MUL, EMBED, SAMPLE_ARGMAX and SOFTMAX over the vocabulary. Each program holds `copies` copies
// of one task, either chained (each waits on the one before: a barrier between them, as in a decode
// step) or independent (no barriers: throughput). µs per op = (pass(copies) - pass(1)) / (copies - 1),
// which cancels the submit and fence wait. A chained 1-element COPY ("floor") gives the dispatch +
// barrier cost in the same run, so chain minus floor is about the kernel's own latency. One JSON
// object per line.
//
//   bench_kernels [--models 0.5b,1.5b,7b] [--kv 128,640,2048,4096] [--ctx 4096] [--kv-dtype f32]
//                 [--ops attention,rmsnorm,...] [--copies 32] [--passes 20] [--quick]
#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../bench_support.hpp"
#include "../json_line.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace ir = octo::ir;

namespace {

/// The decode-relevant part of a Qwen2.5 config (config.json of the published checkpoints).
struct model_shape {
  const char* name;
  std::int64_t hidden, heads, kv_heads, head_dim, ffn, vocab;
};
constexpr model_shape known_models[] = {
    {"0.5b", 896, 14, 2, 64, 4864, 151936},
    {"1.5b", 1536, 12, 2, 128, 8960, 151936},
    {"7b", 3584, 28, 4, 128, 18944, 152064},
    {"tiny", 64, 4, 2, 16, 128, 1000},  // --quick: lavapipe smoke test
};

std::string numbered(const char* stem, int i) {
  std::string s = stem;  // not stem + to_string: g++ 12 warns falsely (-Wrestrict) on that
  s += std::to_string(i);
  return s;
}

/// One task's buffers and params, made once per copy by `add` (copy index i: its own outputs, and for
/// KV caches its own cache so chained copies do not read one L2-resident cache).
struct op_case {
  std::string op;
  std::string detail;  // shape text for the JSON line
  double bytes = 0;    // bytes one task must at least move (for GB/s)
  std::function<void(ir::program&, int, ir::task&)> add;
};

ir::program build(const op_case& c, int copies, bool chain) {
  ir::program p;
  std::int32_t prev = -1;
  for (int i = 0; i < copies; ++i) {
    ir::task t;
    c.add(p, i, t);
    t.out_counter = p.add_counter();
    if (chain && prev >= 0) t.waits = {{prev, 1}};
    prev = t.out_counter;
    p.add_task(std::move(t));
  }
  return p;
}

/// A shared input: added by copy 0, found by name afterwards.
std::int32_t shared_buf(ir::program& p, const char* name, ir::buffer_kind k, ir::dtype t, std::vector<std::int64_t> shape) {
  for (const auto& b : p.buffers)
    if (std::string_view(b.name) == name) return b.id;
  return p.add_buffer(name, k, t, std::move(shape));
}

double median_pass_us(octo::vm::vulkan_vm& vm, int passes) {
  for (int i = 0; i < 3; ++i) vm.execute();  // pipelines, caches, clocks
  std::vector<double> us;
  for (int i = 0; i < passes; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    vm.execute();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

/// Random values into every float input the program has (so softmax / argmax see real data).
void fill_inputs(octo::vm::vulkan_vm& vm, const ir::program& p, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const auto& b : p.buffers) {
    if (b.kind != ir::buffer_kind::io_input && b.kind != ir::buffer_kind::weight) continue;
    if (b.dtype == ir::dtype::i32) {
      std::vector<std::byte> bytes(static_cast<std::size_t>(b.nbytes()), std::byte{0});
      vm.write_bytes(std::string_view(b.name), bytes);  // ids / positions 0: valid everywhere
      continue;
    }
    if (b.dtype != ir::dtype::f32) continue;  // f16 tables: contents do not change the timing
    std::vector<float> v(static_cast<std::size_t>(b.numel()));
    for (auto& x : v) x = u(rng);
    vm.write(std::string_view(b.name), v);
  }
}

std::vector<op_case> cases_for(const model_shape& m, const std::vector<std::int64_t>& kvs, std::int64_t ctx,
                               ir::dtype kv_dt, const std::vector<std::string>& ops) {
  using bk = ir::buffer_kind;
  using dt = ir::dtype;
  const auto want = [&](const char* op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); };
  const std::int64_t qw = m.heads * m.head_dim, kvw = m.kv_heads * m.head_dim;
  const double kv_el = double(ir::nbytes(kv_dt, 1));
  std::vector<op_case> out;
  if (want("floor")) {
    out.push_back({"floor", "COPY of 1 f32 (dispatch + barrier)", 8.0, [](ir::program& p, int i, ir::task& t) {
                     t.op = ir::opcode::copy;
                     t.inputs = {shared_buf(p, "x", bk::io_input, dt::f32, {1})};
                     t.outputs = {p.add_buffer(numbered("y", i), bk::activation, dt::f32, {1})};
                   }});
  }
  if (want("attention")) {
    for (std::int64_t kv : kvs) {
      if (kv > ctx) continue;
      op_case c;
      c.op = "attention";
      c.detail = "q 1x" + std::to_string(m.heads) + "x" + std::to_string(m.head_dim) + ", " +
                 std::to_string(m.kv_heads) + " kv heads, kv_len " + std::to_string(kv) + " of " + std::to_string(ctx) +
                 " slots, " + std::string(ir::name(kv_dt)) + " cache";
      c.bytes = 2.0 * double(kv) * double(kvw) * kv_el + 8.0 * double(qw);
      c.add = [=](ir::program& p, int i, ir::task& t) {
        t.op = ir::opcode::attention_tile;
        auto q = shared_buf(p, "q", bk::io_input, dt::f32, {1, qw});
        auto k = p.add_buffer(numbered("k_cache", i), bk::kv_cache, kv_dt, {ctx, kvw});
        auto v = p.add_buffer(numbered("v_cache", i), bk::kv_cache, kv_dt, {ctx, kvw});
        t.inputs = {q, k, v};
        t.outputs = {p.add_buffer(numbered("o", i), bk::activation, dt::f32, {1, qw})};
        t.params.set(ir::param_key::head_dim, m.head_dim);
        t.params.set(ir::param_key::kv_start, 0);
        t.params.set(ir::param_key::kv_len, kv);
        t.params.set_real(ir::param_key::scale, 1.0 / std::sqrt(double(m.head_dim)));
        t.params.set(ir::param_key::n_heads, m.heads);
        t.params.set(ir::param_key::n_kv_heads, m.kv_heads);
        t.params.set(ir::param_key::causal, 1);
        t.params.set(ir::param_key::q_pos, kv - 1);
      };
      out.push_back(std::move(c));
    }
  }
  if (want("rmsnorm")) {
    out.push_back({"rmsnorm", "1x" + std::to_string(m.hidden), 12.0 * double(m.hidden),
                   [=](ir::program& p, int i, ir::task& t) {
                     t.op = ir::opcode::rmsnorm;
                     t.inputs = {shared_buf(p, "x", bk::io_input, dt::f32, {1, m.hidden}),
                                 shared_buf(p, "w", bk::weight, dt::f32, {m.hidden})};
                     t.outputs = {p.add_buffer(numbered("y", i), bk::activation, dt::f32, {1, m.hidden})};
                     t.params.set_real(ir::param_key::eps, 1e-6);
                     t.params.set(ir::param_key::hidden, m.hidden);
                   }});
  }
  if (want("rope")) {
    out.push_back({"rope", "q 1x" + std::to_string(qw) + ", head_dim " + std::to_string(m.head_dim), 8.0 * double(qw),
                   [=](ir::program& p, int i, ir::task& t) {
                     t.op = ir::opcode::rope;
                     t.inputs = {shared_buf(p, "x", bk::io_input, dt::f32, {1, qw}),
                                 shared_buf(p, "pos", bk::io_input, dt::i32, {1})};
                     t.outputs = {p.add_buffer(numbered("y", i), bk::activation, dt::f32, {1, qw})};
                     t.params.set(ir::param_key::head_dim, m.head_dim);
                     t.params.set_real(ir::param_key::theta, 1000000.0);
                   }});
  }
  if (want("kv_append")) {
    out.push_back({"kv_append", "1x" + std::to_string(kvw) + " into " + std::string(ir::name(kv_dt)) + " cache",
                   (4.0 + kv_el) * double(kvw), [=](ir::program& p, int i, ir::task& t) {
                     t.op = ir::opcode::kv_append;
                     auto c = p.add_buffer(numbered("cache", i), bk::kv_cache, kv_dt, {ctx, kvw});
                     t.inputs = {shared_buf(p, "x", bk::io_input, dt::f32, {1, kvw}), c};
                     t.outputs = {c};
                     t.params.set(ir::param_key::pos, ctx / 2);
                   }});
  }
  if (want("add")) {
    out.push_back({"add", "1x" + std::to_string(m.hidden), 12.0 * double(m.hidden), [=](ir::program& p, int i, ir::task& t) {
                     t.op = ir::opcode::add;
                     t.inputs = {shared_buf(p, "a", bk::io_input, dt::f32, {1, m.hidden}),
                                 shared_buf(p, "b", bk::io_input, dt::f32, {1, m.hidden})};
                     t.outputs = {p.add_buffer(numbered("y", i), bk::activation, dt::f32, {1, m.hidden})};
                   }});
  }
  if (want("silu_mul")) {
    out.push_back({"silu_mul", "1x" + std::to_string(m.ffn), 12.0 * double(m.ffn), [=](ir::program& p, int i, ir::task& t) {
                     t.op = ir::opcode::silu_mul;
                     t.inputs = {shared_buf(p, "g", bk::io_input, dt::f32, {1, m.ffn}),
                                 shared_buf(p, "u", bk::io_input, dt::f32, {1, m.ffn})};
                     t.outputs = {p.add_buffer(numbered("y", i), bk::activation, dt::f32, {1, m.ffn})};
                   }});
  }
  if (want("embed")) {
    out.push_back({"embed", "1 id, F16 table " + std::to_string(m.vocab) + "x" + std::to_string(m.hidden),
                   6.0 * double(m.hidden), [=](ir::program& p, int i, ir::task& t) {
                     t.op = ir::opcode::embed;
                     t.inputs = {shared_buf(p, "ids", bk::io_input, dt::i32, {1}),
                                 shared_buf(p, "table", bk::weight, dt::f16, {m.vocab, m.hidden})};
                     t.outputs = {p.add_buffer(numbered("y", i), bk::activation, dt::f32, {1, m.hidden})};
                     t.params.set(ir::param_key::hidden, m.hidden);
                   }});
  }
  if (want("argmax")) {
    out.push_back({"argmax", "1x" + std::to_string(m.vocab), 4.0 * double(m.vocab), [=](ir::program& p, int i, ir::task& t) {
                     t.op = ir::opcode::sample_argmax;
                     t.inputs = {shared_buf(p, "logits", bk::io_input, dt::f32, {1, m.vocab})};
                     t.outputs = {p.add_buffer(numbered("ids", i), bk::activation, dt::i32, {1})};
                   }});
  }
  if (want("softmax")) {
    out.push_back({"softmax", "1x" + std::to_string(m.vocab), 8.0 * double(m.vocab), [=](ir::program& p, int i, ir::task& t) {
                     t.op = ir::opcode::softmax;
                     t.inputs = {shared_buf(p, "logits", bk::io_input, dt::f32, {1, m.vocab})};
                     t.outputs = {p.add_buffer(numbered("y", i), bk::activation, dt::f32, {1, m.vocab})};
                   }});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string models_arg = "0.5b,1.5b,7b", kv_arg = "128,640,2048,4096", dtype_arg = "f32";
  std::string ops_arg = "floor,attention,rmsnorm,rope,kv_append,add,silu_mul,embed,argmax,softmax";
  std::int64_t ctx = 4096;
  int copies = 32, passes = 20;
  bool quick = false;
  CLI::App app("The decode step's small kernels on Qwen2.5 shapes: one JSON line per (model, op) with\n"
               "us_per_op_chain (copies chained by waits, as a decode step runs them) and us_per_op_independent\n"
               "(copies without barriers), both net of the submit.",
               "bench_kernels");
  octo_bench::set_up(app);
  app.add_option("--models", models_arg, "Qwen2.5 shapes: 0.5b 1.5b 7b tiny")->type_name("LIST")->capture_default_str();
  app.add_option("--kv", kv_arg, "visible keys per case")->type_name("N,...")->capture_default_str();
  octo_bench::positive_option(app, "--ctx", ctx, "KV cache positions (default 4096)");
  app.add_option("--kv-dtype", dtype_arg, "the KV cache's dtype")->capture_default_str();
  app.add_option("--ops", ops_arg, "the ops to time")->type_name("LIST")->capture_default_str();
  octo_bench::positive_option(app, "--copies", copies, "copies of each op per pass, at least 2 (default 32)");
  octo_bench::positive_option(app, "--passes", passes, "timed passes (default 20)");
  app.add_flag("--quick", quick, "the tiny shape, kv 8,40, ctx 64, 4 copies, 3 passes (a smoke test for lavapipe)");
  octo_bench::parse_command_line(app, argc, argv);
  copies = std::max(2, copies);
  try {
    if (ctx > (std::int64_t{1} << 30)) throw octo::error("bench_kernels: --ctx " + std::to_string(ctx) + " is over 2^30 positions");
    if (quick) {
      models_arg = "tiny";
      kv_arg = "8,40";
      ctx = 64;
      copies = 4;
      passes = 3;
    }
    std::vector<model_shape> models;
    for (const auto& s : octo_bench::split(models_arg)) {
      const model_shape* found = nullptr;
      for (const auto& m : known_models)
        if (s == m.name) found = &m;
      if (!found) throw octo::error("bench_kernels: unknown model '" + s + "' (0.5b, 1.5b, 7b, tiny)");
      models.push_back(*found);
    }
    std::vector<std::int64_t> kvs;
    for (const auto& s : octo_bench::split(kv_arg)) {
      char* end = nullptr;
      const long long x = std::strtoll(s.c_str(), &end, 10);
      if (end == s.c_str() || *end != 0 || x <= 0) throw octo::error("bench_kernels: --kv: '" + s + "' is not a positive integer");
      kvs.push_back(x);
    }
    const ir::dtype kv_dt = octo_bench::parse_dtype("bench_kernels", dtype_arg);
    if (kv_dt != ir::dtype::f32 && kv_dt != ir::dtype::f16 && kv_dt != ir::dtype::bf16)
      throw octo::error("bench_kernels: --kv-dtype must be f32, f16 or bf16");
    const auto ops = octo_bench::split(ops_arg);

    octo::vm::vulkan_vm vm(octo::vm::vulkan_options{});
    const std::string device = vm.device().name;
    std::mt19937_64 rng(7);
    for (const auto& m : models) {
      for (const auto& c : cases_for(m, kvs, ctx, kv_dt, ops)) {
        octo_bench::json line = {{"name", "kernel"}, {"device", device}, {"model", m.name}, {"op", c.op}, {"shape", c.detail}};
        try {
          double t1 = 0, chain = 0, indep = 0;
          {
            auto p = build(c, 1, false);
            vm.load(p);
            fill_inputs(vm, p, rng);
            t1 = median_pass_us(vm, passes);
          }
          for (bool ch : {true, false}) {
            auto p = build(c, copies, ch);
            vm.load(p);
            fill_inputs(vm, p, rng);
            (ch ? chain : indep) = median_pass_us(vm, passes);
          }
          const double per_chain = (chain - t1) / double(copies - 1);
          const double per_indep = (indep - t1) / double(copies - 1);
          line["copies"] = copies;
          line["pass_1_us"] = t1;
          line["pass_chain_us"] = chain;
          line["pass_independent_us"] = indep;
          line["us_per_op_chain"] = per_chain;
          line["us_per_op_independent"] = per_indep;
          line["gb_s_independent"] = per_indep > 0 ? c.bytes / (per_indep * 1e3) : 0.0;
        } catch (const octo::error& e) {  // one case failing (memory, an unsupported shape) spares the rest
          line["error"] = e.what();
        }
        octo_bench::print_json_line(line);
      }
    }
  } catch (const octo::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
