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

/// Where a layer of a program ends: `buffer` is the first output of the last task tagged with the
/// layer (param `layer`) -- in a decoder, the residual stream after the layer's feed-forward.
struct layer_output {
  std::int32_t layer = 0;
  std::int32_t buffer = 0;
};

/// The program's layer outputs in layer order (only F32 ones: activations). The VMs observe them after
/// every run (vulkan_options::observe_layers): each layer output is its own buffer, alive to the pass's end.
constexpr std::vector<layer_output> layer_outputs(const program& p) {
  std::vector<layer_output> out;
  for (const auto& t : p.tasks) {
    const std::int64_t l = t.params.get(param_key::layer, -1);
    if (l < 0 || t.outputs.empty()) continue;
    const auto b = t.outputs[0];
    if (b < 0 || static_cast<std::size_t>(b) >= p.buffers.size() ||
        p.buffers[static_cast<std::size_t>(b)].dtype != dtype::f32)
      continue;
    auto it = out.begin();
    while (it != out.end() && it->layer < l) ++it;
    if (it != out.end() && it->layer == l)
      it->buffer = b;  // a later task of the same layer: the layer ends there
    else
      out.insert(it, layer_output{static_cast<std::int32_t>(l), b});
  }
  return out;
}

/// A layer as a unit that can be bypassed: its tasks (in program order), the residual stream coming in
/// (`input`: the first input of its first task) and going out (`output`, as layer_outputs). `input` is -1
/// where the layer's first task does not read an F32 activation of the output's size (such a layer
/// cannot be skipped: nothing would carry the stream past it).
struct layer_span {
  std::int32_t layer = 0;
  std::int32_t input = -1;
  std::int32_t output = 0;
  std::vector<std::int32_t> tasks;
};

/// The program's layers in layer order (those layer_outputs finds).
constexpr std::vector<layer_span> layer_spans(const program& p) {
  std::vector<layer_span> out;
  for (const auto& lo : layer_outputs(p)) {
    layer_span s;
    s.layer = lo.layer;
    s.output = lo.buffer;
    for (const auto& t : p.tasks)
      if (t.params.get(param_key::layer, -1) == lo.layer) s.tasks.push_back(t.id);
    const auto& first = p.tasks[static_cast<std::size_t>(s.tasks.front())];
    if (!first.inputs.empty()) {
      const auto in = first.inputs[0];
      const auto& ob = p.buffers[static_cast<std::size_t>(lo.buffer)];
      if (in >= 0 && static_cast<std::size_t>(in) < p.buffers.size() && in != lo.buffer) {
        const auto& ib = p.buffers[static_cast<std::size_t>(in)];
        if (ib.dtype == dtype::f32 && ib.numel() == ob.numel() && ib.kind != buffer_kind::weight &&
            ib.kind != buffer_kind::constant && ib.kind != buffer_kind::kv_cache)
          s.input = in;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace octo::ir
