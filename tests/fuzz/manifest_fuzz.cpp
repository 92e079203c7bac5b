// libFuzzer target for decomposed directories. The first byte picks what the rest is:
//   even: a manifest.json, parsed (no file checks); one that parses must print back to itself
//   odd:  a layer file's stored bytes, read by layer_reader as zstd (bit 1 of the first byte) or raw,
//         under a manifest written here whose checksum matches the bytes (bit 2) or not
// Everything must succeed or give octo::error; decoding any bytes must stay inside the buffer.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "fuzz_support.hpp"
#include "octo/error.hpp"
#include "octo/stream/layer_reader.hpp"
#include "octo/stream/manifest.hpp"

namespace {

using namespace octo::stream;

void read_layer_file(std::uint8_t flags, std::span<const std::byte> stored) {
  octo::fuzz::put("layer_000.bin", stored);
  octo::fuzz::put("embed.bin", std::span<const std::byte>());
  octo::fuzz::put("head.bin", std::span<const std::byte>());
  octo::fuzz::put("meta.gguf", std::span<const std::byte>());
  stored_config c;
  c.architecture = "llama";
  c.vocab = c.hidden = c.heads = c.kv_heads = c.head_dim = c.ffn = c.max_ctx = c.context_length = 8;
  c.layers = 1;
  c.rope = "neox";
  const bool zstd = flags & 2;
  // Raw size: what the manifest claims the layer decompresses to (a multiple of 4096, up to 64 KiB).
  const std::uint64_t raw = zstd ? io_alignment * (1 + (flags >> 4)) : round_up(stored.size(), io_alignment);
  file_entry meta{"meta.gguf", file_role::head, -1, 0, 0, compression::none, xxh3_64({}), {}};
  std::vector<file_entry> files{
      {"embed.bin", file_role::embed, -1, 0, 0, compression::none, xxh3_64({}), {}},
      {"head.bin", file_role::head, -1, 0, 0, compression::none, xxh3_64({}), {}},
      {"layer_000.bin", file_role::layer, 0, stored.size(), raw, zstd ? compression::zstd : compression::none,
       (flags & 4) ? xxh3_64(stored) : 0x1234, {}}};
  if (!zstd && stored.size() != raw) return;  // an uncompressed file is a multiple of 4096 by construction
  const manifest m(octo::fuzz::scratch(), c, source_info{"x.gguf", 1, 2}, io_alignment, meta, std::move(files), {});
  layer_reader r(m);
  aligned_buffer buf(layer_reader::buffer_bytes(m.layer_file(0)));
  r.read_layer(0, buf.span());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  try {
    if ((data[0] & 1) == 0) {
      const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
      const auto m = manifest::parse(text, octo::fuzz::scratch());
      const auto again = manifest::parse(m.to_json(), octo::fuzz::scratch());
      if (again.to_json() != m.to_json()) __builtin_trap();
    } else {
      read_layer_file(data[0], std::as_bytes(std::span(data + 1, size - 1)));
    }
  } catch (const octo::error&) {
  }
  return 0;
}
