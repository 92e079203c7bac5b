// npy: writes a float32 vector as a NumPy .npy file (format version 1.0), e.g. logits for comparison
// against Python.
#pragma once

#include <filesystem>
#include <span>

namespace octo::runtime {

/// Writes `values` as a little-endian float32 array of shape [values.size()]; octo::error if the file
/// cannot be written.
void write_npy_f32(const std::filesystem::path& path, std::span<const float> values);

}  // namespace octo::runtime
