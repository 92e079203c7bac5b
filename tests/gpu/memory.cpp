// Device memory on the GPU: the budget error, few VkDeviceMemory blocks for many tensors, reloads that
// give memory back, and the pipeline cache on disk (written, reused, robust to corruption).
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "gpu_support.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"

namespace ir = octo::ir;

namespace {

ir::program copy_chain(int buffers, std::int64_t n, std::int64_t weight_elems = 0) {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {n});
  if (weight_elems) p.add_buffer("big_weight", ir::buffer_kind::weight, ir::dtype::f32, {weight_elems});
  std::int32_t prev = x, prev_c = -1;
  for (int i = 0; i < buffers; ++i) {
    auto y = p.add_buffer("t" + std::to_string(i), i + 1 == buffers ? ir::buffer_kind::io_output : ir::buffer_kind::activation,
                          ir::dtype::f32, {n});
    ir::task t;
    t.op = ir::opcode::copy;
    t.inputs = {prev};
    t.outputs = {y};
    t.out_counter = p.add_counter();
    if (prev_c >= 0) t.waits = {{prev_c, 1}};
    p.add_task(t);
    prev = y;
    prev_c = t.out_counter;
  }
  return p;
}

}  // namespace

TEST_CASE("an over-budget request is an error naming the request and the budget") {
  auto o = octo_test::small_options();
  o.memory_budget = 8 << 20;
  octo::vm::vulkan_vm vm(o);
  auto p = copy_chain(2, 16, 4 << 20);  // a 16 MiB weight
  try {
    vm.load(p);
    FAIL("load should have failed");
  } catch (const octo::error& e) {
    std::string m = e.what();
    CHECK(m.find("'big_weight'") != std::string::npos);
    CHECK(m.find("16777216 bytes") != std::string::npos);
    CHECK(m.find("8388608 bytes") != std::string::npos);  // the budget
    CHECK(m.find("budget") != std::string::npos);
    CHECK(m.find('\n') == std::string::npos);
  }
  // The VM is still usable, and the failed load gave its memory back.
  auto in_use = vm.stats().memory_in_use;
  auto small = copy_chain(2, 16);
  vm.load(small);
  vm.write("x", std::vector<float>(16, 3.0f));
  vm.execute();
  CHECK(vm.read_f32("t1") == std::vector<float>(16, 3.0f));
  CHECK(vm.stats().memory_in_use > in_use);
  octo_test::check_clean(vm);
}

TEST_CASE("many tensors share a few device-memory blocks, and reloading frees them") {
  octo::vm::vulkan_vm vm(octo_test::small_options());
  auto base = vm.stats();
  auto p = copy_chain(200, 1000);
  vm.load(p);
  auto s = vm.stats();
  CHECK(s.memory_blocks <= base.memory_blocks + 1);  // 201 tensors, at most one new block
  CHECK(s.memory_in_use >= base.memory_in_use + 201 * 4000);
  CHECK(s.largest_free_block > 0);
  CHECK(s.fragmentation >= 0.0);
  CHECK(s.fragmentation < 1.0);
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f;
  vm.write("x", x);
  vm.execute();
  CHECK(vm.read_f32("t199") == x);
  CHECK(vm.stats().barriers == 199);  // a chain: every task waits on the one before
  auto after = vm.stats();  // now including the staging buffer the transfers made
  vm.load(p);
  CHECK(vm.stats().memory_in_use == after.memory_in_use);  // the first load's tensors were freed
  CHECK(vm.stats().memory_blocks == after.memory_blocks);
  octo_test::check_clean(vm);
}

TEST_CASE("the pipeline cache is written, reused, and survives a corrupt file") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("octo_pcache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto o = octo_test::small_options();
  o.pipeline_cache_dir = dir.string();
  auto p = copy_chain(2, 64);
  auto run = [&] {
    octo::vm::vulkan_vm vm(o);
    vm.load(p);
    vm.write("x", std::vector<float>(64, 1.5f));
    vm.execute();
    CHECK(vm.read_f32("t1") == std::vector<float>(64, 1.5f));
    return vm.stats().pipeline_cache_loaded;
  };
  CHECK_FALSE(run());  // nothing on disk yet
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().rfind("pipelines-", 0) == 0);
  CHECK(run());  // the second boot finds it
  {
    std::ofstream f(files[0], std::ios::binary | std::ios::trunc);
    f << "this is not a pipeline cache";
  }
  CHECK_FALSE(run());  // corrupt: ignored, rebuilt, rewritten
  CHECK(run());
  fs::remove_all(dir);
  // An unwritable cache location is not an error either.
  o.pipeline_cache_dir = "/proc/octo-cannot-write-here";
  CHECK_FALSE(run());
}

TEST_CASE("transfers larger than the staging chunk (64 MiB) round-trip") {
  const std::int64_t n = (80ll << 20) / 4;  // 80 MiB of floats: two staging chunks each way
  ir::program big;
  auto bx = big.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {n});
  auto by = big.add_buffer("y", ir::buffer_kind::io_output, ir::dtype::f32, {n});
  ir::task c;
  c.op = ir::opcode::copy;
  c.inputs = {bx};
  c.outputs = {by};
  c.out_counter = big.add_counter();
  big.add_task(c);
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.load(big);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000003) - 7.0f;
  vm.write("x", x);
  vm.execute();
  auto got = vm.read_f32("y");
  REQUIRE(got.size() == x.size());
  CHECK(got == x);
  octo_test::check_clean(vm);
}
