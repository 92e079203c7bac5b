// decompose: splits a GGUF into a decomposed model directory (manifest.json, meta.gguf, embed.bin,
// head.bin, layer_NNN.bin), written atomically: a temporary sibling directory renamed into place at the end.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "octo/model_file/gguf.hpp"
#include "octo/stream/manifest.hpp"

namespace octo::stream {

struct decompose_progress {
  std::string_view file;           // the file just written
  std::size_t files_done = 0, files_total = 0;
  std::uint64_t bytes_done = 0, bytes_total = 0;  // raw tensor bytes
};

struct decompose_options {
  bool zstd = false;                // compress layer files (not embed/head: they are read once)
  int zstd_level = 3;
  std::uint64_t alignment = io_alignment;  // tensor offsets inside files (a power of two, 16 to 1 MiB)
  /// Called after each file is complete (on the calling thread).
  std::function<void(const decompose_progress&)> progress;
  /// Test hook: called with each file's name after it is written in the temporary directory; throwing
  /// (or exiting) from it simulates an interrupted run.
  std::function<void(std::string_view file)> after_file;
};

enum class decompose_outcome : std::uint8_t {
  created,   // OUTDIR did not exist (or held no valid manifest)
  kept,      // OUTDIR already held a complete, verified decomposition of the same source and options
  replaced,  // OUTDIR held something else; replaced atomically
};

/// Decomposes `gguf` (opened from `gguf_path`) into `out_dir` with `config` (what the runtime read from
/// the file: octo/runtime/decomposed.hpp's decompose_gguf fills it). Stale temporary directories of
/// earlier interrupted runs (OUTDIR.tmp-PID-*, PID no longer running) are removed first. Throws
/// octo::error naming the file on I/O problems; the temporary directory is removed then.
decompose_outcome decompose(const model_file::gguf_file& gguf, const std::filesystem::path& gguf_path,
                            const std::filesystem::path& out_dir, const stored_config& config,
                            const decompose_options& o = {});

/// Which file a tensor goes to: "blk.N.*" -> layer N; token_embd.weight -> embed; anything else -> head.
struct tensor_placement {
  file_role role;
  std::int64_t layer;  // for role layer
};
tensor_placement place_tensor(std::string_view tensor_name);
/// "layer_007.bin" (at least three digits).
std::string layer_file_name(std::int64_t layer);

}  // namespace octo::stream
