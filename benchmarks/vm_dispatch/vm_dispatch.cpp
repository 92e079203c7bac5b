// The cost per task of a dispatch (+ a barrier) inside one recorded command buffer: programs of N tiny
// COPY tasks, either independent (no barriers) or chained (a barrier before every task), each pass one
// vm.execute(). Prints one JSON object per result: the median pass time over N, against the 1-task pass.
//
//   bench_vm_dispatch [--tasks 64,256,1024] [--passes 30]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../bench_support.hpp"
#include "../json_line.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace ir = octo::ir;

static ir::program make(int tasks, bool chain, std::int64_t n) {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {n});
  std::int32_t prev = x, prev_c = -1;
  for (int i = 0; i < tasks; ++i) {
    auto y = p.add_buffer("y" + std::to_string(i), ir::buffer_kind::activation, ir::dtype::f32, {n});
    ir::task t;
    t.op = ir::opcode::copy;
    t.inputs = {chain ? prev : x};
    t.outputs = {y};
    t.out_counter = p.add_counter();
    if (chain && prev_c >= 0) t.waits = {{prev_c, 1}};
    p.add_task(t);
    prev = y;
    prev_c = t.out_counter;
  }
  return p;
}

static double median_pass_us(octo::vm::vulkan_vm& vm, int passes) {
  for (int i = 0; i < 3; ++i) vm.execute();
  std::vector<double> us;
  for (int i = 0; i < passes; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    vm.execute();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

int main(int argc, char** argv) {
  std::vector<int> sizes{64, 256, 1024};
  int passes = 30;
  CLI::App app("What one dispatch costs the Vulkan VM: passes of N tiny tasks, independent and chained, one JSON\n"
               "line each.",
               "bench_vm_dispatch");
  octo_bench::set_up(app);
  octo_bench::option(app, "--tasks", "N,...", "tasks per pass, at least 2 each (default 64,256,1024)", [&](const std::string& v) {
    sizes.clear();
    for (const auto& t : octo_bench::split(v))
      sizes.push_back(static_cast<int>(std::clamp<std::int64_t>(octo_bench::positive("bench_vm_dispatch", "--tasks", t), 2, 1 << 20)));
    if (sizes.empty()) throw octo::error("bench_vm_dispatch: --tasks needs at least one count");
  });
  octo_bench::positive_option(app, "--passes", passes, "timed passes, the median kept (default 30)");
  octo_bench::parse_command_line(app, argc, argv);
  try {
    octo::vm::vulkan_vm vm(octo::vm::vulkan_options{});
    const std::string device = vm.device().name;
    const std::int64_t n = 64;  // 256 bytes per task: the kernel itself is negligible
    vm.load(make(1, false, n));
    double base = median_pass_us(vm, passes);
    octo_bench::print_json_line({{"name", "vm_pass_1_task"}, {"device", device}, {"median_us", base}});
    for (bool chain : {false, true})
      for (int tasks : sizes) {
        vm.load(make(tasks, chain, n));
        double t = median_pass_us(vm, passes);
        auto s = vm.stats();
        char bound[64];
        std::snprintf(bound, sizeof bound, "1-task pass %.2f us", base);
        octo_bench::print_json_line({{"name", "vm_dispatch_cost"},
                                     {"device", device},
                                     {"mode", chain ? "chain" : "independent"},
                                     {"tasks", tasks},
                                     {"barriers", s.barriers},
                                     {"median_pass_us", t},
                                     {"us_per_task", (t - base) / (tasks - 1)},
                                     {"bound", bound}});
      }
  } catch (const octo::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
