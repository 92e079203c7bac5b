// Placeholder until the Vulkan VM's streaming API (notes/vm-streaming-api.md) is in vulkan_vm.hpp: the
// streaming engine runs on the reference backend only, and asking for Vulkan says so.
#include "octo/error.hpp"
#include "stream_vm.hpp"

namespace octo::runtime::detail {

std::unique_ptr<stream_vm> make_vulkan_stream_vm(const vm::vulkan_options&) {
  throw octo::error("octo: the streaming engine needs the Vulkan VM's streaming API, which this build lacks "
                    "(use the reference backend)");
}

}  // namespace octo::runtime::detail
