// The device layer: listing, boot, the facts recorded for kernels, device selection errors.
#include <doctest/doctest.h>

#include <bit>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"

TEST_CASE("devices are listed and the VM boots on one of them") {
  auto devices = octo::vm::list_vulkan_devices();
  REQUIRE_FALSE(devices.empty());
  bool any_suitable = false;
  for (const auto& d : devices) {
    CHECK_FALSE(d.name.empty());
    any_suitable = any_suitable || d.suitable;
  }
  CHECK(any_suitable);

  octo::vm::vulkan_vm vm(octo_test::small_options());
  REQUIRE(vm.booted());
  auto f = vm.device();
  CHECK(f.buffer_device_address);
  CHECK(f.subgroup_size >= 1);
  CHECK(std::has_single_bit(f.subgroup_size));
  CHECK(f.max_push_constants >= 128);
  CHECK(f.max_allocation_size > 0);
  if (f.name.find("llvmpipe") != std::string::npos) {
    // lavapipe as ENVIRONMENT.md measured it: the facts must come out the same.
    CHECK(f.type == "cpu");
    CHECK(f.subgroup_size == 8);
    CHECK(f.subgroup_arithmetic);
    CHECK(f.subgroup_shuffle);
    CHECK(f.float16_arithmetic);
    CHECK(f.int8_arithmetic);
    CHECK(f.storage_8bit);
    CHECK(f.storage_16bit);
    CHECK(f.timeline_semaphores);
    CHECK_FALSE(f.cooperative_matrix_nv);
  }
  octo_test::check_clean(vm);
  vm.shutdown();
  CHECK_FALSE(vm.booted());
}

TEST_CASE("keep_awake: the clock-keeping work runs where the device has a second compute queue, nests, and stops") {
  // Where it runs (the H200) its work is one spinning workgroup on a queue of its own; a program runs
  // beside it and computes what it computes without it. lavapipe has one queue: nothing runs there, and
  // every call still answers.
  octo::vm::vulkan_vm vm(octo_test::small_options());
  const bool spare = vm.device().spare_compute_queue;
  MESSAGE("spare compute queue: " << spare);
  if (vm.device().name.find("llvmpipe") != std::string::npos) CHECK_FALSE(spare);
  CHECK(vm.keep_awake(true) == spare);
  CHECK(vm.keep_awake(true) == spare);   // nested
  CHECK(vm.keep_awake(false) == spare);  // still held once
  octo::ir::program p;
  const auto a = p.add_buffer("a", octo::ir::buffer_kind::io_input, octo::ir::dtype::f32, {1, 4});
  const auto b = p.add_buffer("b", octo::ir::buffer_kind::io_input, octo::ir::dtype::f32, {1, 4});
  const auto c = p.add_buffer("c", octo::ir::buffer_kind::io_output, octo::ir::dtype::f32, {1, 4});
  octo::ir::task t;
  t.op = octo::ir::opcode::add;
  t.inputs = {a, b};
  t.outputs = {c};
  t.out_counter = p.add_counter();
  p.add_task(t);
  vm.load(p);
  vm.write("a", std::vector<float>{1, 2, 3, 4});
  vm.write("b", std::vector<float>{10, 20, 30, 40});
  vm.execute();
  CHECK(vm.read_f32("c") == std::vector<float>{11, 22, 33, 44});
  CHECK_FALSE(vm.keep_awake(false));
  CHECK_FALSE(vm.keep_awake(false));  // one release too many changes nothing
  ::setenv("OCTO_KEEP_AWAKE", "0", 1);
  CHECK_FALSE(vm.keep_awake(true));
  CHECK_FALSE(vm.keep_awake(false));
  ::setenv("OCTO_KEEP_AWAKE", "maybe", 1);
  CHECK_THROWS_WITH_AS(vm.keep_awake(true), doctest::Contains("OCTO_KEEP_AWAKE must be 0 or 1"), octo::error);
  ::unsetenv("OCTO_KEEP_AWAKE");
  CHECK_FALSE(vm.keep_awake(false));
  CHECK(vm.keep_awake(true) == spare);  // held at destruction: the VM stops it
}

TEST_CASE("a device selector that matches nothing is one clear error") {
  auto o = octo_test::small_options();
  o.device = "no-such-gpu-xyz";
  try {
    octo::vm::vulkan_vm vm(o);
    FAIL("boot should have failed");
  } catch (const octo::error& e) {
    CHECK(std::string(e.what()) == "octo: no Vulkan device's name contains 'no-such-gpu-xyz' (OCTO_DEVICE)");
  }
  o.device = "99";
  CHECK_THROWS_WITH_AS(octo::vm::vulkan_vm{o}, doctest::Contains("only"), octo::error);
  // By index: device 0 is selectable when suitable.
  auto devices = octo::vm::list_vulkan_devices();
  if (devices[0].suitable) {
    o.device = "0";
    octo::vm::vulkan_vm vm(o);
    CHECK(vm.device().name == devices[0].name);
  }
}

TEST_CASE("calls before boot are errors, not crashes") {
  octo::vm::vulkan_vm vm;
  CHECK_FALSE(vm.booted());
  CHECK_THROWS_AS(vm.execute(), octo::error);
  CHECK_THROWS_AS(vm.set_position(1), octo::error);
  CHECK_THROWS_AS((void)vm.read_f32("x"), octo::error);
  CHECK_THROWS_AS((void)vm.device(), octo::error);
}
