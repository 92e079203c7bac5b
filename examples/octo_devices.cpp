// octo_devices: lists the Vulkan devices octo can see, and with --boot opens the one it would use
// (OCTO_DEVICE=<index or name> overrides the choice) and prints what it supports.
//
//   $ octo_devices            # [0] NVIDIA H100 80GB HBM3 (discrete, Vulkan 1.4.312, 81559 MiB) *
//   $ OCTO_DEVICE=1 octo_devices --boot
#include <cstdio>
#include <cstring>
#include <string_view>

#include "octo/error.hpp"
#include "octo/vm/vulkan_vm.hpp"

int main(int argc, char** argv) {
  bool boot = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::puts("usage: octo_devices [--boot]\n"
                "  Lists the Vulkan devices; '*' marks those octo can run on (Vulkan 1.2, buffer device address).\n"
                "  --boot  open the device octo would choose and print its facts\n"
                "environment: OCTO_DEVICE=<index|name substring> chooses the device; OCTO_VALIDATION=1 enables\n"
                "  the Khronos validation layers.");
      return 0;
    }
    if (a == "--boot") {
      boot = true;
      continue;
    }
    std::fprintf(stderr, "octo_devices: unknown argument '%s' (try --help)\n", argv[i]);
    return 2;
  }
  try {
    auto devices = octo::vm::list_vulkan_devices();
    if (devices.empty()) throw octo::error("octo: no Vulkan device found (the loader sees no driver)");
    for (const auto& d : devices)
      std::printf("[%u] %s (%s, Vulkan %s, %llu MiB)%s%s\n", d.index, d.name.c_str(), d.type.c_str(),
                  d.api_version.c_str(), static_cast<unsigned long long>(d.device_local_bytes >> 20),
                  d.suitable ? " *" : " - ", d.suitable ? "" : d.why_not.c_str());
    if (boot) {
      octo::vm::vulkan_options o;
      o.pipeline_cache_dir = "-";
      octo::vm::vulkan_vm vm(o);
      auto f = vm.device();
      std::printf("booted: %s (%s)\n  subgroup %u (arithmetic %d, shuffle %d)\n  fp16 %d, int8 %d, 8-bit storage %d, "
                  "16-bit storage %d\n  timeline semaphores %d, buffer device address %d, NV cooperative matrix %d (mma layout %d)\n"
                  "  int8 dot products %d (accelerated %d)\n  separate transfer queue %d, push constants %u B, shared memory %u B, largest allocation %llu MiB\n",
                  f.name.c_str(), f.type.c_str(), f.subgroup_size, f.subgroup_arithmetic, f.subgroup_shuffle,
                  f.float16_arithmetic, f.int8_arithmetic, f.storage_8bit, f.storage_16bit, f.timeline_semaphores,
                  f.buffer_device_address, f.cooperative_matrix_nv, f.cooperative_matrix_mma_layout, f.int_dot, f.int_dot_accelerated,
                  f.separate_transfer_queue, f.max_push_constants,
                  f.max_shared_memory, static_cast<unsigned long long>(f.max_allocation_size >> 20));
      // What the layout probe found where it is not NVIDIA's mma fragment order (element = row * columns +
      // column, per invocation), so the register kernel forms can be adapted to the device.
      if (!f.cooperative_matrix_layout.empty())
        std::printf("  cooperative matrix elements: %s\n", f.cooperative_matrix_layout.c_str());
    }
  } catch (const octo::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
