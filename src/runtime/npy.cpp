// npy: magic, version 1.0, a header dict padded with spaces to a 64-byte boundary ending in '\n', data.
#include "octo/runtime/npy.hpp"

#include <bit>
#include <cstdint>
#include <string>

#include "octo/error.hpp"
#include "octo/file_io.hpp"

namespace octo::runtime {

void write_npy_f32(const std::filesystem::path& path, std::span<const float> values) {
  static_assert(std::endian::native == std::endian::little, "octo writes .npy on little-endian hosts only");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(values.size()) + ",), }";
  const std::size_t prefix = 10;  // magic (6) + version (2) + header length (2)
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  octo::output_file out(path);
  const auto len = static_cast<std::uint16_t>(header.size());
  const char magic[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(std::as_bytes(std::span(magic)));
  out.write(std::as_bytes(std::span(header)));
  out.write(std::as_bytes(values));
  out.commit();
}

}  // namespace octo::runtime
