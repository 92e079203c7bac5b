// GpuTarget: a GPU described as data (docs/ir.md §5.1). Retarget by adding a record, never by editing
// the scheduler. "SM" is the NVIDIA name for a compute unit; on other vendors it is a CU / EU.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "octo/ir/text.hpp"

namespace octo::ir {

struct gpu_target {
  text name;
  std::int32_t sm_arch = 0;
  std::int32_t num_sms = 1;
  std::int64_t smem_bytes_per_sm = 0;
  std::int64_t smem_bytes_per_block_optin = 0;
  std::int64_t regs_per_sm = 0;
  std::int32_t max_threads_per_sm = 0;
  std::int32_t max_regs_per_thread = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t hbm_bytes = 0;
  double hbm_bandwidth_gbs = 0.0;
  double fp16_tflops = 0.0;
  double clock_ghz = 0.0;
  bool supports_cooperative = true;
  bool wddm_tdr = false;
  text note;

  /// The honest single-stream decode floor: weight bytes over memory bandwidth, in microseconds.
  constexpr double bandwidth_bound_us(std::int64_t weight_bytes) const {
    return hbm_bandwidth_gbs > 0 ? static_cast<double>(weight_bytes) / (hbm_bandwidth_gbs * 1e9) * 1e6 : 0.0;
  }
  friend constexpr bool operator==(const gpu_target&, const gpu_target&) = default;
};

namespace detail {
struct target_record {
  std::string_view name;
  std::int32_t sm_arch, num_sms;
  std::int64_t smem_per_sm, smem_optin, regs_per_sm;
  std::int32_t max_threads_per_sm, max_regs_per_thread;
  std::int64_t l2_bytes, hbm_bytes;
  double bandwidth_gbs, fp16_tflops, clock_ghz;
  bool cooperative, wddm_tdr;
  std::string_view note;
};
inline constexpr std::int64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
// Spec-sheet values unless the note says measured.
inline constexpr std::array<target_record, 6> target_records{{
    {"h100", 90, 132, 228 * KiB, 227 * KiB, 65536, 2048, 255, 50 * MiB, 80 * GiB, 3350.0, 989.0, 1.98, true,
     false, "H100 SXM 80GB; torch measured 3071 GB/s HBM read on the project's lent H100"},
    {"h200", 90, 132, 228 * KiB, 227 * KiB, 65536, 2048, 255, 50 * MiB, 141 * GiB, 4800.0, 989.0, 1.98, true,
     false, "H200 SXM 141GB, spec only"},
    {"rtx4090", 89, 128, 100 * KiB, 99 * KiB, 65536, 1536, 255, 72 * MiB, 24 * GiB, 1008.0, 165.0, 2.52, true,
     false, "GeForce RTX 4090, spec only"},
    {"rtx5090", 120, 170, 228 * KiB, 227 * KiB, 65536, 1536, 255, 96 * MiB, 32 * GiB, 1792.0, 210.0, 2.41, true,
     true, "GeForce RTX 5090 under Windows (WDDM TDR), spec only"},
    {"b200", 100, 148, 228 * KiB, 227 * KiB, 65536, 2048, 255, 126 * MiB, 180 * GiB, 8000.0, 2250.0, 1.97, true,
     false, "B200, spec only"},
    {"lavapipe", 0, 2, 32 * KiB, 32 * KiB, 0, 1024, 0, 0, 0, 10.0, 0.05, 0.0, false, false,
     "Mesa lavapipe (Vulkan on the CPU): one 'SM' per host core of the CI machine; subgroup size 8"},
}};
}  // namespace detail

/// Names of the built-in targets.
constexpr std::array<std::string_view, detail::target_records.size()> target_names() {
  std::array<std::string_view, detail::target_records.size()> n{};
  for (std::size_t i = 0; i < n.size(); ++i) n[i] = detail::target_records[i].name;
  return n;
}

/// The built-in target called `name`, or nullopt.
constexpr std::optional<gpu_target> find_target(std::string_view name) {
  for (const auto& r : detail::target_records)
    if (r.name == name)
      return gpu_target{text(r.name), r.sm_arch, r.num_sms, r.smem_per_sm, r.smem_optin,
                        r.regs_per_sm, r.max_threads_per_sm, r.max_regs_per_thread, r.l2_bytes, r.hbm_bytes,
                        r.bandwidth_gbs, r.fp16_tflops, r.clock_ghz, r.cooperative, r.wddm_tdr,
                        text(r.note)};
  return std::nullopt;
}

}  // namespace octo::ir
