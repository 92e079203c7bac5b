// GEMV_TILE bandwidth: one task (y[1,N] = x[1,K] @ W[N,K].T) per program, and a chain of independent
// tasks over distinct weight copies (amortizes the submit and defeats the L2), for several N x K and
// weight dtypes. Prints one JSON object per case: bytes moved per pass, GB/s, and the fraction of a
// bandwidth bound (--bandwidth-gbs, else a measured device COPY: read + write bytes over time).
//
//   bench_gemv_bandwidth [--quick] [--passes 50] [--bandwidth-gbs X] [--sizes 896x896,3584x3584]
//                        [--dtypes f32,f16,q8_0,q4_0,q4_k,q6_k]
#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

struct timing {
  double best_us = 0, median_us = 0;
};

timing time_passes(octo::vm::vulkan_vm& vm, int passes) {
  for (int i = 0; i < 3; ++i) vm.execute();  // pipelines, caches, clocks
  std::vector<double> us;
  for (int i = 0; i < passes; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    vm.execute();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return {us.front(), us[us.size() / 2]};
}

/// `chain` independent GEMV_TILE tasks, each over its own weight copy and output: no barriers between them.
ir::program make_gemv(ir::dtype dt, std::int64_t n, std::int64_t k, int chain) {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {1, k});
  for (int i = 0; i < chain; ++i) {
    std::string wn = "w", yn = "y";  // not "w" + to_string: g++ 12 warns falsely (-Wrestrict) on that
    wn += std::to_string(i);
    yn += std::to_string(i);
    auto w = p.add_buffer(wn, ir::buffer_kind::weight, dt, {n, k});
    auto y = p.add_buffer(yn, ir::buffer_kind::io_output, ir::dtype::f32, {1, n});
    ir::task t;
    t.op = ir::opcode::gemv_tile;
    t.inputs = {x, w};
    t.outputs = {y};
    t.out_counter = p.add_counter();
    t.params.set(ir::param_key::K, k);
    t.params.set(ir::param_key::N_tile, n);
    t.params.set(ir::param_key::n_off, 0);
    p.add_task(t);
  }
  return p;
}

ir::program make_copy(std::int64_t n) {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {n});
  auto y = p.add_buffer("y", ir::buffer_kind::activation, ir::dtype::f32, {n});
  ir::task t;
  t.op = ir::opcode::copy;
  t.inputs = {x};
  t.outputs = {y};
  t.out_counter = p.add_counter();
  p.add_task(t);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int passes = -1;
  double bound_gbs = 0.0, chain_mib = -1.0;
  std::string sizes_arg, dtypes_arg = "f32,f16,q8_0,q4_0,q4_k,q6_k";
  CLI::App app("GEMV weight bandwidth per shape and dtype against a device copy, one JSON line each.",
               "bench_gemv_bandwidth");
  octo_bench::set_up(app);
  app.add_flag("--quick", quick, "small sizes, few passes (a smoke test for lavapipe)");
  octo_bench::positive_option(app, "--passes", passes, "timed passes per case after 3 warm-up passes (default 50; quick 3)");
  octo_bench::positive_real_option(app, "--bandwidth-gbs", bound_gbs,
                                   "the bound to report fractions of (default: a measured device COPY, read+write)");
  app.add_option("--sizes", sizes_arg,
                 "N x K of W (default 896x896,4864x896,896x4864,3584x3584,18944x3584,3584x18944,\n152064x3584)")
      ->type_name("NxK,...");
  app.add_option("--dtypes", dtypes_arg, "weight dtypes")->type_name("LIST")->capture_default_str();
  octo_bench::positive_real_option(app, "--chain-mib", chain_mib, "weight MiB per chained pass (default 512; quick 4)");
  octo_bench::parse_command_line(app, argc, argv);
  try {
    if (passes < 0) passes = quick ? 3 : 50;
    if (chain_mib < 0) chain_mib = quick ? 4 : 512;
    if (sizes_arg.empty())
      sizes_arg = quick ? "64x256,256x512" : "896x896,4864x896,896x4864,3584x3584,18944x3584,3584x18944,152064x3584";
    std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
    for (const auto& s : octo_bench::split(sizes_arg)) {
      long long n = 0, k = 0;
      char tail = 0;
      if (std::sscanf(s.c_str(), "%lldx%lld%c", &n, &k, &tail) != 2 || n <= 0 || k <= 0)
        throw octo::error("bench_gemv_bandwidth: --sizes: '" + s + "' is not NxK");
      sizes.emplace_back(n, k);
    }
    std::vector<ir::dtype> dtypes;
    for (const auto& s : octo_bench::split(dtypes_arg)) dtypes.push_back(octo_bench::parse_dtype("bench_gemv_bandwidth", s));

    octo::vm::vulkan_vm vm(octo::vm::vulkan_options{});
    const std::string device = vm.device().name;
    using octo_bench::json;
    using octo_bench::print_json_line;
    const std::uint64_t max_alloc = vm.device().max_allocation_size;

    // The bound: a device-to-device COPY of 256 MiB (256 KiB quick), read + write bytes per pass.
    std::string bound_name = "given --bandwidth-gbs";
    try {  // a failing COPY (a timeout) spares the GEMV cases when the bound is given
      const std::int64_t n = quick ? (1 << 16) : (64 << 20);
      vm.load(make_copy(n));
      vm.write("x", std::vector<float>(static_cast<std::size_t>(n), 1.0f));
      const auto t = time_passes(vm, passes);
      const double bytes = 2.0 * 4.0 * double(n);
      const double gbs = bytes / (t.best_us * 1e3);
      print_json_line({{"name", "device_copy"},
                       {"device", device},
                       {"bytes_per_pass", bytes},
                       {"best_us", t.best_us},
                       {"median_us", t.median_us},
                       {"gb_s", gbs},
                       {"gb_s_median", bytes / (t.median_us * 1e3)},
                       {"bound", bound_gbs > 0 ? "given --bandwidth-gbs" : "this is the measured bound (best pass)"}});
      if (bound_gbs <= 0) {
        bound_gbs = gbs;
        bound_name = "measured device COPY (read+write)";
      }
    } catch (const octo::error& e) {
      print_json_line({{"name", "device_copy"}, {"device", device}, {"error", e.what()}});
      if (bound_gbs <= 0) throw;
    }

    std::mt19937_64 rng(42);
    for (auto [n, k] : sizes)
      for (ir::dtype dt : dtypes) {
        const auto& lay = ir::layout(dt);
        const json head = {{"name", "gemv_bandwidth"}, {"device", device}, {"dtype", std::string(ir::name(dt))},
                           {"N", n}, {"K", k}};
        if (k % lay.block_elems != 0) {
          json line = head;
          line["skipped"] = "K is not a multiple of the " + std::to_string(lay.block_elems) + "-element block";
          print_json_line(line);
          continue;
        }
        const auto wbytes = static_cast<std::uint64_t>(ir::nbytes(dt, n * k));
        if (wbytes > max_alloc) {
          json line = head;
          line["skipped"] = "weight of " + std::to_string(wbytes) + " bytes exceeds the device's largest allocation";
          print_json_line(line);
          continue;
        }
        const auto w = octo_bench::make_weight(dt, n, k, rng);
        std::vector<float> x(static_cast<std::size_t>(k));
        for (auto& v : x) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
        const int chain =
            static_cast<int>(std::clamp<double>(std::ceil(chain_mib * 1048576.0 / double(wbytes)), 1.0, 256.0));
        for (int c : chain > 1 ? std::vector<int>{1, chain} : std::vector<int>{1}) {
          json line = head;
          line["tasks"] = c;
          try {
            vm.load(make_gemv(dt, n, k, c));
            for (int i = 0; i < c; ++i) {
              std::string wn = "w";
              wn += std::to_string(i);
              vm.write_bytes(wn, w);
            }
            vm.write("x", x);
            const auto t = time_passes(vm, passes);
            const double bytes = double(c) * (double(wbytes) + 4.0 * double(k) + 4.0 * double(n));
            const double gbs = bytes / (t.median_us * 1e3), gbs_best = bytes / (t.best_us * 1e3);
            line["bytes_per_pass"] = bytes;
            line["best_us"] = t.best_us;
            line["median_us"] = t.median_us;
            line["gb_s"] = gbs;
            line["gb_s_best"] = gbs_best;
            line["fraction_of_bound"] = gbs / bound_gbs;
            line["bound_gb_s"] = bound_gbs;
            line["bound"] = bound_name;
          } catch (const octo::error& e) {  // one case failing (memory, an unsupported shape) spares the rest
            line["error"] = e.what();
          }
          print_json_line(line);
        }
      }
  } catch (const octo::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
