// decomposed: the bridge between a decomposed model directory (octo::stream::manifest) and the runtime:
// the model_config it stores, and decomposing a GGUF with the config config_from_gguf reads from it.
#pragma once

#include <cstdint>
#include <filesystem>

#include "octo/models/model_config.hpp"
#include "octo/stream/decompose.hpp"
#include "octo/stream/manifest.hpp"

namespace octo::runtime {

/// The stored form of `c` (context_length: the GGUF's trained context, kept for ctx overrides).
stream::stored_config to_stored_config(const models::model_config& c, std::int64_t context_length);

/// The model_config a decomposed directory stores, as config_from_gguf(original GGUF, ctx) would give:
/// `ctx` is the KV length (0: the stored default, min(context_length, 4096)). octo::error if the
/// manifest's config is not a model octo runs.
models::model_config config_from_manifest(const stream::manifest& m, std::int64_t ctx = 0);

/// Opens `gguf`, reads its config with config_from_gguf, and decomposes it into `out_dir`.
stream::decompose_outcome decompose_gguf(const std::filesystem::path& gguf, const std::filesystem::path& out_dir,
                                         const stream::decompose_options& o = {});

}  // namespace octo::runtime
