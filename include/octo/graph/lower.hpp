// Lowering at the root: the node store flattens once into an ir::program (buffers, one counter per
// producing node, waits with threshold = the producer's tile count, tiles from schedule_config).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "octo/graph/node.hpp"
#include "octo/ir/program.hpp"
#include "octo/ir/schedule_config.hpp"

namespace octo::detail {

/// The tiles one node lowers into: m_tiles x n_tiles tasks, each a (row, column) block.
struct tile_plan {
  std::int64_t m_tile = 0, n_tile = 0, m_tiles = 1, n_tiles = 1;
  constexpr std::int64_t count() const { return m_tiles * n_tiles; }
};

constexpr std::int64_t clamp_tile(std::int64_t want, std::int64_t extent) {
  return (want <= 0 || want > extent) ? extent : want;
}

/// GEMV tiles split the output columns (config "gemv"/"N_tile"), GEMM tiles rows and columns
/// ("gemm"/"M_tile", "gemm"/"N_tile"). The default is one task per op: on Vulkan one dispatch
/// covers every column, so tiling is a schedule choice, not a necessity.
struct tiling_choice {
  std::int64_t gemv_n = 0, gemm_m = 0, gemm_n = 0;  // 0: whole extent
};

constexpr tiling_choice read_tiling(const ir::schedule_config& cfg) {
  return {cfg.tile("gemv", "N_tile", 0), cfg.tile("gemm", "M_tile", 0), cfg.tile("gemm", "N_tile", 0)};
}

constexpr tile_plan plan_tiles(const node& n, const tiling_choice& c) {
  tile_plan t;
  if (n.op != ir::opcode::gemv_tile && n.op != ir::opcode::gemm_tile) return t;
  const std::int64_t cols = n.shape[static_cast<std::size_t>(n.rank - 1)];
  const std::int64_t rows = n.numel_rows();
  const bool gemm = n.op == ir::opcode::gemm_tile;
  t.n_tile = clamp_tile(gemm ? c.gemm_n : c.gemv_n, cols);
  t.n_tiles = (cols + t.n_tile - 1) / t.n_tile;
  t.m_tile = gemm ? clamp_tile(c.gemm_m, rows) : rows;
  t.m_tiles = (rows + t.m_tile - 1) / t.m_tile;
  return t;
}

/// The buffer name: the node's name, or OPNAME#index.
constexpr ir::text node_name(const node& n, std::size_t index) {
  if (!n.name.empty()) return ir::text(n.name.view());
  name_buf b;
  b.append(ir::name(n.op), "#", static_cast<std::int64_t>(index));
  return ir::text(b.view());
}

/// Lowers a node store; `cfg` is recorded in the program. Pages and SM assignment are graph::lower's
/// follow-up passes. Costs O(nodes * fan-in) and allocates only what the program keeps; task labels
/// and counter notes stay empty (validate names tasks OPNAME#id; buffers carry the names).
constexpr ir::program lower_nodes(const std::vector<node>& nodes, const ir::schedule_config& cfg) {
  ir::program p;
  const std::size_t n_nodes = nodes.size();
  std::vector<std::int32_t> buf(n_nodes, -1), ctr(n_nodes, -1), ntasks(n_nodes, 0);
  const tiling_choice tiling = read_tiling(cfg);

  std::size_t n_buffers = 0, n_ops = 0, n_tasks = 0;
  for (const node& n : nodes) {
    n_buffers += (n.kind != node_kind::op || n.in_place < 0) ? 1 : 0;
    if (n.kind == node_kind::op) {
      ++n_ops;
      n_tasks += static_cast<std::size_t>(plan_tiles(n, tiling).count());
    }
  }
  p.buffers.reserve(n_buffers);
  p.counters.reserve(n_ops);
  p.tasks.reserve(n_tasks);

  for (std::size_t i = 0; i < n_nodes; ++i) {
    const node& n = nodes[i];
    if (n.kind == node_kind::op && n.in_place >= 0) {
      buf[i] = buf[static_cast<std::size_t>(n.in[static_cast<std::size_t>(n.in_place)])];
      continue;
    }
    ir::buffer_kind kind = ir::buffer_kind::activation;
    switch (n.kind) {
      case node_kind::input: kind = ir::buffer_kind::io_input; break;
      case node_kind::weight: kind = ir::buffer_kind::weight; break;
      case node_kind::kv_cache: kind = ir::buffer_kind::kv_cache; break;
      case node_kind::op: kind = n.is_output ? ir::buffer_kind::io_output : ir::buffer_kind::activation; break;
    }
    // Built in place: every temporary buffer moved into the vector costs its fields' moves and destructors.
    buf[i] = static_cast<std::int32_t>(p.buffers.size());
    ir::buffer& b = p.buffers.emplace_back();
    b.id = buf[i];
    b.name = node_name(n, i);
    b.kind = kind;
    b.dtype = n.dtype;
    b.shape.resize(static_cast<std::size_t>(n.rank));
    for (std::int32_t d = 0; d < n.rank; ++d) b.shape[static_cast<std::size_t>(d)] = n.shape[static_cast<std::size_t>(d)];
    if (n.kind == node_kind::weight) b.source = b.name;  // weights are named by their GGUF key
  }

  for (std::size_t i = 0; i < n_nodes; ++i) {
    const node& n = nodes[i];
    if (n.kind != node_kind::op) continue;
    ctr[i] = static_cast<std::int32_t>(p.counters.size());
    p.counters.emplace_back().id = ctr[i];  // in place: no temporary counter to move

    // inputs and distinct producers, on the stack
    std::array<std::int32_t, ir::abi_max_inputs> ins{};
    std::array<ir::wait, ir::abi_max_inputs> waits{};
    std::size_t n_waits = 0;
    for (std::int32_t s = 0; s < n.n_in; ++s) {
      const auto src = static_cast<std::size_t>(n.in[static_cast<std::size_t>(s)]);
      ins[static_cast<std::size_t>(s)] = buf[src];
      if (nodes[src].kind != node_kind::op) continue;
      bool seen = false;
      for (std::size_t w = 0; w < n_waits; ++w) seen = seen || waits[w].counter == ctr[src];
      if (!seen) waits[n_waits++] = ir::wait{ctr[src], ntasks[src]};
    }

    const tile_plan t = plan_tiles(n, tiling);
    ntasks[i] = static_cast<std::int32_t>(t.count());
    const bool tiled = n.op == ir::opcode::gemv_tile || n.op == ir::opcode::gemm_tile;
    const std::int64_t k = n.params.get(ir::param_key::K);
    const std::int64_t rows = n.numel_rows();
    const std::int64_t cols = n.shape[static_cast<std::size_t>(n.rank - 1)];
    const ir::dtype w_dtype = tiled ? nodes[static_cast<std::size_t>(n.in[1])].dtype : ir::dtype::f32;
    for (std::int64_t mi = 0; mi < t.m_tiles; ++mi)
      for (std::int64_t ni = 0; ni < t.n_tiles; ++ni) {
        ir::task& tk = p.tasks.emplace_back();  // in place, as the buffers
        tk.id = static_cast<std::int32_t>(p.tasks.size() - 1);
        tk.op = n.op;
        tk.inputs.resize(static_cast<std::size_t>(n.n_in));
        for (std::size_t s = 0; s < static_cast<std::size_t>(n.n_in); ++s) tk.inputs[s] = ins[s];
        tk.outputs.resize(1);
        tk.outputs[0] = buf[i];
        tk.out_counter = ctr[i];
        tk.waits.resize(n_waits);
        for (std::size_t w = 0; w < n_waits; ++w) tk.waits[w] = waits[w];
        auto& items = tk.params.items;
        items.reserve(static_cast<std::size_t>(n.params.n) + (tiled ? 4 : 0) + (n.layer >= 0 ? 1 : 0));
        for (std::int32_t j = 0; j < n.params.n; ++j) {
          const auto& it = n.params.items[static_cast<std::size_t>(j)];
          ir::param& q = items.emplace_back();
          q.key = it.key;
          q.is_real = it.is_real;
          q.i = it.i;
          q.f = it.f;
        }
        auto add_int = [&items](ir::param_key key, std::int64_t v) {
          ir::param& q = items.emplace_back();
          q.key = key;
          q.i = v;
        };
        if (tiled) {
          const std::int64_t m_off = mi * t.m_tile, n_off = ni * t.n_tile;
          const std::int64_t mt = std::min(t.m_tile, rows - m_off), nt = std::min(t.n_tile, cols - n_off);
          if (n.op == ir::opcode::gemm_tile) {
            add_int(ir::param_key::M_tile, mt);
            add_int(ir::param_key::m_off, m_off);
          }
          add_int(ir::param_key::N_tile, nt);
          add_int(ir::param_key::n_off, n_off);
          tk.est_bytes = ir::nbytes(w_dtype, nt * k);
          tk.est_flops = 2 * mt * nt * k;
        }
        if (n.layer >= 0) add_int(ir::param_key::layer, n.layer);
      }
  }
  p.has_config = true;
  p.config = cfg;
  p.set_meta("generator", "octo::graph");
  return p;
}

}  // namespace octo::detail
