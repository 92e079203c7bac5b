// residency_plan: which transformer layers stay in VRAM and which stream through a ring of device slots,
// given a VRAM budget (seeds/001 "Partial Residency": the first and last layers stay resident first).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace octo::runtime {

/// Everything the plan depends on, in bytes of device memory.
struct residency_inputs {
  std::vector<std::uint64_t> layer_bytes;  // weights of each transformer layer, as laid out in a slot
  std::uint64_t embed_bytes = 0;           // token embedding table (always resident)
  std::uint64_t head_bytes = 0;            // final norm + LM head (0 for the head of a tied embedding)
  std::uint64_t kv_bytes = 0;              // every layer's KV cache for the context (always resident)
  std::uint64_t activation_bytes = 0;      // hidden-state ping-pong, IO and scratch of the programs
  std::uint32_t ring_depth = 2;            // device slots streamed layers cycle through (>= 1)
  std::uint64_t slot_alignment = 4096;     // each slot's size is rounded up to this
  std::uint64_t vram_budget = 0;           // bytes the plan may use in all
};

struct residency_plan {
  std::vector<bool> resident;        // per layer: kept in VRAM (true) or streamed (false)
  std::int64_t resident_layers = 0;
  std::int64_t streamed_layers = 0;
  std::uint32_t ring_depth = 0;      // slots allocated: min(requested depth, streamed layers); 0 when none stream
  std::uint64_t slot_bytes = 0;      // one slot: the largest streamed layer, aligned; 0 when none stream
  std::uint64_t fixed_bytes = 0;     // embed + head + KV + activations
  std::uint64_t resident_bytes = 0;  // weights of the resident layers
  std::uint64_t ring_bytes = 0;      // ring_depth * slot_bytes
  std::uint64_t total_bytes = 0;     // fixed + resident + ring (<= budget)
  std::uint64_t budget_bytes = 0;
  std::uint64_t streamed_bytes_per_pass = 0;  // layer bytes uploaded per token (decode) / per prompt chunk

  bool all_resident() const { return streamed_layers == 0; }
  /// Several lines: the budget, each part's bytes, and the layers as ranges ("resident 0-3, 28-31;
  /// streamed 4-27").
  std::string describe() const;
};

/// The plan that keeps the most layers resident within `in.vram_budget`, choosing them in the order
/// 0, L-1, 1, L-2, ... (the first and last layers first). Everything fits resident when it can (no
/// ring). Throws octo::error with one line naming the sizes when even the minimum (embed + head + KV +
/// activations + a ring for every layer streamed) exceeds the budget, or when the inputs are malformed
/// (no layers, ring depth 0, zero-byte layer).
residency_plan plan_residency(const residency_inputs& in);

/// The plan with exactly `resident` layers resident (the first of the same order), whatever the budget
/// (the budget is only reported): for tests and experiments. octo::error when `resident` is not in [0, L].
residency_plan plan_with_resident_count(const residency_inputs& in, std::int64_t resident);

/// A pipeline's stages: the first layer of each stage, then the layer count (stages + 1 entries). `split`:
/// layers per stage (empty: as even as possible, earlier stages one more). octo::error with one line when
/// the split does not sum to `layers`, has a stage of no layers, or has not `stages` entries.
std::vector<std::int64_t> plan_pipeline(std::int64_t layers, std::size_t stages, const std::vector<std::int64_t>& split);

/// "4 GiB", "512 MiB", "1.5 GiB", "123 B": for plans and logs.
std::string format_bytes(std::uint64_t bytes);
/// Parses a size such as "4GiB", "512MiB", "1.5G", "300MB", "4096" (bytes); binary units for K/M/G/T
/// with or without "iB"/"B" (1G = 1 GiB), case-insensitive. octo::error naming `what` on bad text.
std::uint64_t parse_bytes(const std::string& text, const std::string& what = "size");

}  // namespace octo::runtime
