// The leak check's own test (sanitizer builds only): boots the Vulkan VM as every GPU test does, so the
// driver's own leaks are present and must be suppressed, then leaks from octo code on purpose. The test
// passes only if LeakSanitizer still reports exactly that leak (tests/sanitizers/CMakeLists.txt).
#include <cstdio>
#include <cstring>
#include <string_view>

#include "octo/error.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace octo::test {

// Allocates and drops the only pointer: what a forgotten delete in octo looks like to LeakSanitizer.
[[gnu::noinline]] void octo_deliberate_leak_canary() {
  auto* lost = new char[4096];
  std::memset(lost, 0x5a, 4096);
  std::printf("leaked %p\n", static_cast<void*>(lost));
  lost = nullptr;
}

}  // namespace octo::test

int main(int argc, char** argv) {
  const bool leak = argc > 1 && std::string_view(argv[1]) == "--leak";
  try {
    octo::vm::vulkan_options o;
    o.pipeline_cache_dir = "-";
    octo::vm::vulkan_vm vm(o);
    std::printf("booted %s\n", vm.device().name.c_str());
  } catch (const octo::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  if (leak) octo::test::octo_deliberate_leak_canary();
  return 0;
}
