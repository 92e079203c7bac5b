// GEMM_TILE throughput for prefill: y[T,N] = x[T,K] @ W[N,K].T for the linear layers of Qwen2.5-0.5B /
// 1.5B / 7B at T prompt tokens, per weight dtype and per GEMM kernel (src/vulkan/kernels/gemm.cpp,
// forced through OCTO_GEMM_KERNEL). Times are GPU timestamps around each task (vulkan_options::
// profile), median over every task of every pass; each submit runs several tasks so clocks stay up. Prints one JSON object per shape (TFLOP/s) and one per model (the
// sum over a layer's GEMMs times the layer count: prefill tok/s if the GEMMs were all there was).
//
//   bench_gemm [--quick] [--models 0.5b,1.5b,7b] [--tokens 128,512] [--dtypes f16,q8_0,q4_k]
//              [--kernels auto,old,reg,coop] [--passes 20]
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../bench_support.hpp"
#include "../json_line.hpp"
#include "octo/detail/element_convert.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace ir = octo::ir;

namespace {

struct shape {
  const char* name;
  std::int64_t n, k;
  int count;  // GEMMs of this shape per layer
};
struct model {
  const char* name;
  int layers;
  std::vector<shape> shapes;
};

// Qwen2.5 configs (hidden, intermediate, heads x head_dim, kv heads): q and o are hidden x hidden,
// k and v are (kv heads * head_dim) x hidden, gate and up intermediate x hidden, down hidden x intermediate.
const std::vector<model> models = {
    {"0.5b", 24, {{"q_o", 896, 896, 2}, {"k_v", 128, 896, 2}, {"gate_up", 4864, 896, 2}, {"down", 896, 4864, 1}}},
    {"1.5b", 28, {{"q_o", 1536, 1536, 2}, {"k_v", 256, 1536, 2}, {"gate_up", 8960, 1536, 2}, {"down", 1536, 8960, 1}}},
    {"7b", 28, {{"q_o", 3584, 3584, 2}, {"k_v", 512, 3584, 2}, {"gate_up", 18944, 3584, 2}, {"down", 3584, 18944, 1}}},
    {"tiny", 2, {{"q_o", 80, 256, 2}, {"gate_up", 200, 256, 2}}},
};

/// `reps` GEMM tasks over the same x and W, each into its own output: one submit keeps the GPU busy for
/// milliseconds, so its clocks are up (a lone 50 us dispatch per submit measured the idle clock).
ir::program make_gemm(ir::dtype dt, std::int64_t t, std::int64_t n, std::int64_t k, int reps) {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {t, k});
  auto w = p.add_buffer("w", ir::buffer_kind::weight, dt, {n, k});
  for (int r = 0; r < reps; ++r) {
    std::string yn = "y";  // not "y" + to_string: g++ 12 warns falsely (-Wrestrict) on that
    yn += std::to_string(r);
    auto y = p.add_buffer(yn, ir::buffer_kind::activation, ir::dtype::f32, {t, n});
    ir::task tk;
    tk.op = ir::opcode::gemm_tile;
    tk.inputs = {x, w};
    tk.outputs = {y};
    tk.out_counter = p.add_counter();
    tk.params.set(ir::param_key::M_tile, t);
    tk.params.set(ir::param_key::m_off, 0);
    tk.params.set(ir::param_key::K, k);
    tk.params.set(ir::param_key::N_tile, n);
    tk.params.set(ir::param_key::n_off, 0);
    p.add_task(tk);
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int passes = -1;
  std::string models_arg = "0.5b,1.5b,7b", tokens_arg = "128,512", dtypes_arg = "f16,q8_0,q4_0,q4_k,q6_k",
              kernels_arg = "auto,old";
  CLI::App app("Prefill GEMM throughput of Qwen2.5-shaped weights, one JSON line per shape, dtype and kernel.",
               "bench_gemm");
  octo_bench::set_up(app);
  app.add_flag("--quick", quick, "the 'tiny' model at T=32, 3 passes (a smoke test for lavapipe)");
  app.add_option("--models", models_arg, "Qwen2.5 shapes: 0.5b 1.5b 7b tiny")->type_name("LIST")->capture_default_str();
  app.add_option("--tokens", tokens_arg, "prompt lengths T")->type_name("LIST")->capture_default_str();
  app.add_option("--dtypes", dtypes_arg, "weight dtypes")->type_name("LIST")->capture_default_str();
  app.add_option("--kernels", kernels_arg,
                 "auto (the planner's choice), old (64x64), reg (register-blocked SIMT),\n"
                 "coop (cooperative matrix, f16 high + low parts), coopf (cooperative\n"
                 "matrix, plain f16); the coop kernels fall back where the device lacks them")
      ->type_name("LIST")->capture_default_str();
  octo_bench::positive_option(app, "--passes", passes, "timed passes per case after 2 warm-up passes (default 20; quick 3)");
  app.footer("OCTO_GEMM_TILE=MxN forces the tile (see src/vulkan/kernels/gemm.cpp).");
  octo_bench::parse_command_line(app, argc, argv);
  try {
    if (quick) {
      models_arg = "tiny";
      tokens_arg = "32";
      dtypes_arg = "f16,q4_k";
      kernels_arg = "auto,old,reg";
    }
    if (passes < 0) passes = quick ? 3 : 20;
    std::vector<const model*> chosen;
    for (const auto& s : octo_bench::split(models_arg)) {
      const model* m = nullptr;
      for (const auto& c : models)
        if (s == c.name) m = &c;
      if (!m) throw octo::error("bench_gemm: unknown model '" + s + "' (0.5b 1.5b 7b tiny)");
      chosen.push_back(m);
    }
    std::vector<std::int64_t> tokens;
    for (const auto& s : octo_bench::split(tokens_arg)) {
      const long long v = std::atoll(s.c_str());
      if (v < 1) throw octo::error("bench_gemm: --tokens: '" + s + "' is not a positive count");
      tokens.push_back(v);
    }
    std::vector<ir::dtype> dtypes;
    for (const auto& s : octo_bench::split(dtypes_arg)) dtypes.push_back(octo_bench::parse_dtype("bench_gemm", s));
    std::vector<std::string> kernels = octo_bench::split(kernels_arg);
    for (const auto& k : kernels)
      if (k != "auto" && k != "old" && k != "reg" && k != "coop" && k != "coopf")
        throw octo::error("bench_gemm: unknown kernel '" + k + "' (auto old reg coop coopf)");

    octo::vm::vulkan_options opt;
    opt.profile = true;
    octo::vm::vulkan_vm vm(opt);
    const std::string device = vm.device().name;
    const char* tile_env = std::getenv("OCTO_GEMM_TILE");
    const std::string tile = tile_env ? tile_env : "auto";
    std::mt19937_64 rng(42);

    for (const model* m : chosen)
      for (std::int64_t t : tokens)
        for (ir::dtype dt : dtypes)
          for (const auto& kern : kernels) {
            if (kern == "auto") ::unsetenv("OCTO_GEMM_KERNEL");
            else ::setenv("OCTO_GEMM_KERNEL", kern.c_str(), 1);
            double layer_us = 0, layer_flop = 0;
            bool complete = true;
            for (const shape& s : m->shapes) {
              octo_bench::json line = {{"name", "gemm"}, {"device", device},       {"model", m->name},
                                       {"shape", s.name},  {"dtype", std::string(ir::name(dt))},
                                       {"kernel", kern},   {"tile", tile},           {"T", t},
                                       {"N", s.n},         {"K", s.k}};
              if (s.k % ir::layout(dt).block_elems != 0) {
                line["skipped"] =
                    "K is not a multiple of the " + std::to_string(ir::layout(dt).block_elems) + "-element block";
                octo_bench::print_json_line(line);
                complete = false;
                continue;
              }
              try {
                const double flop = 2.0 * double(t) * double(s.n) * double(s.k);
                // About 20 GFLOP per submit (a few ms on a large GPU), 3 to 40 tasks; 1 when --quick.
                const int reps = quick ? 1 : static_cast<int>(std::clamp(20e9 / flop, 3.0, 40.0));
                vm.load(make_gemm(dt, t, s.n, s.k, reps));
                vm.write_bytes("w", octo_bench::make_weight(dt, s.n, s.k, rng));
                std::vector<float> x(static_cast<std::size_t>(t * s.k));
                std::uniform_real_distribution<float> u(-1.0f, 1.0f);
                for (auto& v : x) v = u(rng);
                vm.write("x", x);
                for (int i = 0; i < 2; ++i) vm.execute();
                std::vector<double> us;
                for (int i = 0; i < passes; ++i) {
                  vm.execute();
                  for (const auto& pr : vm.profile())
                    if (pr.opcode == "GEMM_TILE") us.push_back(pr.microseconds);
                }
                if (us.empty()) throw octo::error("no GPU timestamps came back");
                std::sort(us.begin(), us.end());
                const double med = us[us.size() / 2];
                layer_us += s.count * med;
                layer_flop += s.count * flop;
                line["tasks_per_submit"] = reps;
                line["best_us"] = us.front();
                line["median_us"] = med;
                line["tflop_s"] = flop / (med * 1e6);
                octo_bench::print_json_line(line);
              } catch (const octo::error& e) {  // one case failing spares the rest
                line["error"] = e.what();
                octo_bench::print_json_line(line);
                complete = false;
              }
              std::fflush(stdout);
            }
            if (complete && layer_us > 0)
              octo_bench::print_json_line({{"name", "gemm_model"},
                                           {"device", device},
                                           {"model", m->name},
                                           {"dtype", std::string(ir::name(dt))},
                                           {"kernel", kern},
                                           {"tile", tile},
                                           {"T", t},
                                           {"layers", m->layers},
                                           {"gemm_ms_per_prompt", layer_us * m->layers / 1e3},
                                           {"tflop_s", layer_flop / (layer_us * 1e6)},
                                           {"tok_s_gemm_only", double(t) / (layer_us * m->layers / 1e6)}});
            std::fflush(stdout);
          }
    ::unsetenv("OCTO_GEMM_KERNEL");
  } catch (const octo::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
