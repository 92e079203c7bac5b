// device_abi: what every kernel reads besides its push constants -- the globals record and the dtype
// codes -- declared once here; shaders/ include the GLSL generated from it at build time
// (gen_device_abi.cpp -> octo_device_abi.glsl), so the two sides cannot drift.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "octo/ir/enums.hpp"

namespace octo::vm::vulkan {

// The per-token values kernels read (std430, at the globals address): every field a uint
// (name, initial value, meaning).
#define OCTO_GLOBALS_FIELDS(X)                               \
  X(pos, 0, "position of the first token of this pass")      \
  X(n_tokens, 1, "tokens in this pass")                      \
  X(reserved0, 0, "")                                        \
  X(reserved1, 0, "")

struct globals_record {
#define OCTO_GLOBALS_MEMBER(name, init, what) std::uint32_t name = init;
  OCTO_GLOBALS_FIELDS(OCTO_GLOBALS_MEMBER)
#undef OCTO_GLOBALS_MEMBER
};
static_assert(sizeof(globals_record) == 16, "std430: four uints");

/// The GLSL side: `const uint DT_<NAME>` for every ir::dtype and the globals_buf buffer reference.
inline void write_device_abi_glsl(std::ostream& out) {
  out << "// Generated at build time by src/vulkan/gen_device_abi.cpp from src/vulkan/device_abi.hpp and\n"
         "// include/octo/ir/enums.hpp: do not edit.\n"
         "#ifndef OCTO_DEVICE_ABI_GLSL\n#define OCTO_DEVICE_ABI_GLSL\n\n"
         "// IR dtype codes.\n";
  for (int i = 0; i < ir::dtype_count; ++i)
    out << "const uint DT_" << ir::dtype_names[std::size_t(i)] << " = " << i << "u;\n";
  out << "\n// The globals record (device_abi.hpp: globals_record).\n"
         "layout(buffer_reference, std430, buffer_reference_align = 4) buffer globals_buf {\n";
#define OCTO_GLOBALS_GLSL(name, init, what) out << "  uint " #name ";" << (std::string(what).empty() ? "" : "  // " what) << "\n";
  OCTO_GLOBALS_FIELDS(OCTO_GLOBALS_GLSL)
#undef OCTO_GLOBALS_GLSL
  out << "};\n\n#endif\n";
}

}  // namespace octo::vm::vulkan
