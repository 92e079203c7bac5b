// The program: a complete task-DAG schedule (docs/ir.md §1, MegakernelProgram). Plain data with
// constexpr helpers, so a program can be built, validated and dropped inside one constant expression.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "octo/ir/buffer.hpp"
#include "octo/ir/gpu_target.hpp"
#include "octo/ir/pages.hpp"
#include "octo/ir/schedule_config.hpp"
#include "octo/ir/task.hpp"
#include "octo/ir/version.hpp"

namespace octo::ir {

/// One provenance entry of `meta` ({model, gpu, regime, dtype, notes...}). `value` is a plain string
/// unless `raw_json` is set, in which case it holds the JSON text of a non-string value.
struct meta_entry {
  text key;
  text value;
  bool raw_json = false;
  friend constexpr bool operator==(const meta_entry&, const meta_entry&) = default;
};

/// Ids are indices: buffers[i].id == i, counters[i].id == i, tasks[i].id == i (validate() checks it).
struct program {
  std::vector<meta_entry> meta;
  bool has_target = false;
  gpu_target target;
  std::vector<buffer> buffers;
  std::vector<counter> counters;
  std::vector<task> tasks;
  bool has_pages = false;
  page_allocation pages;
  bool has_config = false;
  schedule_config config;
  text ir_version{ir::ir_version};
  text abi_version{ir::abi_version};

  // ---- building ----------------------------------------------------------------------------------
  constexpr std::int32_t add_buffer(text name, buffer_kind kind, ir::dtype dt, shape_t shape,
                                    text source = {}, mem_space space = mem_space::hbm) {
    auto id = static_cast<std::int32_t>(buffers.size());
    buffers.push_back(buffer{id, std::move(name), kind, dt, std::move(shape), space, std::move(source)});
    return id;
  }
  constexpr std::int32_t add_counter(text note = {}) {
    auto id = static_cast<std::int32_t>(counters.size());
    counters.push_back(counter{id, 0, std::move(note)});
    return id;
  }
  /// Appends a task; its id is its index.
  constexpr std::int32_t add_task(task t) {
    t.id = static_cast<std::int32_t>(tasks.size());
    tasks.push_back(std::move(t));
    return tasks.back().id;
  }

  // ---- queries -----------------------------------------------------------------------------------
  constexpr std::string_view meta_value(std::string_view key) const {
    for (const auto& m : meta)
      if (m.key == key) return m.value;
    return {};
  }
  constexpr void set_meta(text key, text value) {
    for (auto& m : meta)
      if (m.key == key) {
        m.value = std::move(value);
        m.raw_json = false;
        return;
      }
    meta.push_back({std::move(key), std::move(value), false});
  }
  /// Bytes of all WEIGHT buffers: what a bandwidth-bound decode step must read.
  constexpr std::int64_t total_weight_bytes() const {
    std::int64_t n = 0;
    for (const auto& b : buffers)
      if (b.kind == buffer_kind::weight) n += b.nbytes();
    return n;
  }
  friend constexpr bool operator==(const program&, const program&) = default;
};

}  // namespace octo::ir
