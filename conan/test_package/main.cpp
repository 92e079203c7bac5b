// Conan test_package: include <octo.hpp>, prove a small typed graph's schedule valid at compile time,
// run it on the CPU reference VM and, when a Vulkan device exists, on the Vulkan VM; both results are
// checked by hand.
#include <octo.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace {

// y = 2 * (a + b) as a typed graph: an ADD, then a MUL by 2 that waits for it. The extents are static,
// so a shape mismatch here would be a compile error.
constexpr octo::ir::program make_program() {
  octo::graph g;
  auto a = g.input<octo::f32>("a", octo::extents<1, 4>{});
  auto b = g.input<octo::f32>("b", octo::extents<1, 4>{});
  g.output("y", octo::scale(octo::add(a, b), 2.0));
  return g.lower(octo::schedule_config{});
}
static_assert(octo::validate(make_program()).ok, "the test program must validate at compile time");

constexpr std::array<float, 4> a{1.0f, 2.0f, 3.0f, 4.0f};
constexpr std::array<float, 4> b{0.5f, -1.0f, 0.25f, 10.0f};
constexpr std::array<float, 4> expected{3.0f, 2.0f, 6.5f, 28.0f};  // 2 * (a + b), by hand

bool check(const char* vm, const std::vector<float>& y) {
  std::printf("%s: y = [%g, %g, %g, %g]\n", vm, static_cast<double>(y.at(0)), static_cast<double>(y.at(1)),
              static_cast<double>(y.at(2)), static_cast<double>(y.at(3)));
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (std::fabs(y.at(i) - expected[i]) > 1e-6f) {
      std::fprintf(stderr, "%s: y[%zu] = %g, expected %g\n", vm, i, static_cast<double>(y.at(i)),
                   static_cast<double>(expected[i]));
      return false;
    }
  return true;
}

}  // namespace

int main() {
  std::printf("octo %s (Conan test_package)\n", std::string(octo::version()).c_str());
  try {
    octo::vm::reference_vm ref(make_program());
    ref.write("a", a);
    ref.write("b", b);
    ref.run();
    if (!check("reference VM", ref.read_f32("y"))) return 1;
  } catch (const octo::error& e) {
    std::fprintf(stderr, "reference VM: %s\n", e.what());
    return 1;
  }

  // Vulkan only where a suitable device exists; once one does, any failure is a failure.
  std::vector<octo::vm::vulkan_device_info> devices;
  try {
    devices = octo::vm::list_vulkan_devices();
  } catch (const octo::error& e) {
    std::printf("Vulkan VM: skipped (%s)\n", e.what());
    return 0;
  }
  bool suitable = false;
  for (const auto& d : devices) suitable = suitable || d.suitable;
  if (!suitable) {
    std::printf("Vulkan VM: skipped (no suitable Vulkan device among %zu)\n", devices.size());
    return 0;
  }
  try {
    octo::vm::vulkan_options options;
    options.pipeline_cache_dir = "-";
    octo::vm::vulkan_vm vm(options);
    vm.load(make_program());
    vm.write("a", std::span<const float>(a));
    vm.write("b", std::span<const float>(b));
    vm.execute();
    std::printf("Vulkan device: %s\n", vm.device().name.c_str());
    if (!check("Vulkan VM", vm.read_f32("y"))) return 1;
  } catch (const octo::error& e) {
    std::fprintf(stderr, "Vulkan VM: %s\n", e.what());
    return 1;
  }
  return 0;
}
