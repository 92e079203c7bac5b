// Lowering at the root: the node store flattens once into an ir::program (buffers, one counter per
// producing node, waits with threshold = the producer's tile count, tiles from schedule_config).
#pragma once

#include <algorithm>
#include <array>
#include <string_view>
#include <cstdint>
#include <vector>

#include "octo/graph/node.hpp"
#include "octo/ir/program.hpp"
#include "octo/ir/schedule_config.hpp"
#include "octo/semantics/rope.hpp"

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

/// Ops whose output columns are GEMV (or GEMM) columns, tiled by the schedule, and the input slot of
/// their (first) weight; -1 for the others.
constexpr bool column_tiled(ir::opcode op) {
  return op == ir::opcode::gemv_tile || op == ir::opcode::gemm_tile || op == ir::opcode::rmsnorm_gemv ||
         op == ir::opcode::gemv_add || op == ir::opcode::rmsnorm_swiglu;
}
constexpr int weight_slot(ir::opcode op) {
  switch (op) {
    case ir::opcode::gemv_tile: case ir::opcode::gemm_tile: case ir::opcode::gemv_add: return 1;
    case ir::opcode::rmsnorm_gemv: case ir::opcode::rmsnorm_swiglu: case ir::opcode::rmsnorm_gemv_rope:
    case ir::opcode::rmsnorm_gemv_kv: case ir::opcode::rmsnorm_gemv_norm_rope: case ir::opcode::rmsnorm_gemv_norm_kv:
    case ir::opcode::rmsnorm_gemv_qkv: case ir::opcode::rmsnorm_gemv_norm_qkv:  // W_q (W_k and W_v follow)
      return 2;
    default: return -1;
  }
}

constexpr tile_plan plan_tiles(const node& n, const tiling_choice& c) {
  tile_plan t;
  if (!column_tiled(n.op)) return t;
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


// ---- fusion (docs/ir.md §5.1) --------------------------------------------------------------------

/// The chains lowering fuses: schedule_config::fusion_grouping lists chains of plain opcodes, in dataflow
/// order, each of which becomes one task of a fused opcode (docs/opcodes.md "Fused ops").
struct fusion_chain {
  std::array<std::string_view, 5> ops;
  std::size_t n;
  ir::opcode fused;
};
inline constexpr std::array<fusion_chain, 17> fusion_chains{{
    {{"RMSNORM", "GEMV_TILE"}, 2, ir::opcode::rmsnorm_gemv},
    {{"GEMV_TILE", "ADD"}, 2, ir::opcode::gemv_add},
    {{"RMSNORM", "GEMV_TILE", "SILU_MUL"}, 3, ir::opcode::rmsnorm_swiglu},
    {{"RMSNORM", "GEMV_TILE", "ROPE"}, 3, ir::opcode::rmsnorm_gemv_rope},
    {{"RMSNORM", "GEMV_TILE", "ROPE", "KV_APPEND"}, 4, ir::opcode::rmsnorm_gemv_kv},
    {{"RMSNORM", "GEMV_TILE", "KV_APPEND"}, 3, ir::opcode::rmsnorm_gemv_kv},
    {{"RMSNORM", "ROPE"}, 2, ir::opcode::rmsnorm_rope},
    {{"RMSNORM", "ROPE", "KV_APPEND"}, 3, ir::opcode::rmsnorm_rope_kv},
    {{"GEMM_TILE", "ADD"}, 2, ir::opcode::gemv_add},  // prefill: GEMV_ADD over every row (the GEMM kernels' epilogue)
    {{"RMSNORM", "GEMM_TILE"}, 2, ir::opcode::rmsnorm_gemv},  // prefill: the norm in the GEMM kernels' x staging
    // Qwen3's q and k: the per-head norm (an RMSNORM with hidden = the ROPE's head_dim) between the GEMV and
    // the ROPE, both norms with one eps, the GEMV without a bias.
    {{"RMSNORM", "GEMV_TILE", "RMSNORM", "ROPE"}, 4, ir::opcode::rmsnorm_gemv_norm_rope},
    {{"RMSNORM", "GEMV_TILE", "RMSNORM", "ROPE", "KV_APPEND"}, 5, ir::opcode::rmsnorm_gemv_norm_kv},
    // prefill: gate and up in one GEMM kernel (their rows interleaved in its tiles), SiLU.mul in its epilogue
    {{"RMSNORM", "GEMM_TILE", "SILU_MUL"}, 3, ir::opcode::rmsnorm_swiglu},
    // prefill: q, k and v over every row, RoPE and the cache write in the GEMM kernels' epilogue
    {{"RMSNORM", "GEMM_TILE", "ROPE"}, 3, ir::opcode::rmsnorm_gemv_rope},
    {{"RMSNORM", "GEMM_TILE", "ROPE", "KV_APPEND"}, 4, ir::opcode::rmsnorm_gemv_kv},
    {{"RMSNORM", "GEMM_TILE", "KV_APPEND"}, 3, ir::opcode::rmsnorm_gemv_kv},
    // decode: one norm's q, k and v GEMV_TILEs with q's ROPE, k's ROPE and KV_APPEND and v's KV_APPEND
    // (not a chain but the three projections of one norm: fuse_qkv)
    {{"RMSNORM", "GEMV_TILE", "GEMV_TILE", "GEMV_TILE"}, 4, ir::opcode::rmsnorm_gemv_qkv},
}};

/// Which chains a schedule asks for (index into fusion_chains). An unknown group is an error: a
/// schedule that asks for a fusion it does not get would be measured as something it is not.
struct fusion_set {
  std::array<bool, fusion_chains.size()> on{};
  constexpr bool any() const {
    for (bool b : on)
      if (b) return true;
    return false;
  }
};

constexpr fusion_set read_fusions(const ir::schedule_config& cfg) {
  fusion_set f;
  for (const auto& g : cfg.fusion_grouping) {
    bool known = false;
    for (std::size_t c = 0; c < fusion_chains.size(); ++c) {
      const auto& ch = fusion_chains[c];
      bool same = g.size() == ch.n;
      for (std::size_t k = 0; same && k < ch.n; ++k) same = g[k] == ch.ops[k];
      if (same) f.on[c] = known = true;
    }
    if (!known)
      graph_error("octo::graph: a fusion_grouping entry is not a chain lowering fuses (docs/ir.md 5.1 lists them)");
  }
  return f;
}

/// Rewrites the node store in place: the last node of each matched chain becomes the fused op (keeping
/// its index, name, output and in-place slot, so consumers still read it), the chain's other nodes are
/// marked `fused_away`. A chain fuses only where its inner values have no other reader (an RMSNORM may
/// feed several fused GEMVs: each recomputes it, and it goes once nothing reads it). Walking from the
/// last node back, every consumer is seen before its producers, so the longest chain wins.
constexpr void fuse_nodes(std::vector<node>& nodes, const fusion_set& f) {
  const std::size_t count = nodes.size();
  std::vector<std::int32_t> uses(count, 0);
  std::vector<bool> lost_use(count, false);
  for (const node& n : nodes) {
    for (std::int32_t s = 0; s < n.n_in; ++s) ++uses[static_cast<std::size_t>(n.in[static_cast<std::size_t>(s)])];
    if (n.is_output) ++uses[static_cast<std::size_t>(&n - nodes.data())];
  }
  const auto is = [&](std::int32_t j, ir::opcode op) {
    const node& n = nodes[static_cast<std::size_t>(j)];
    return n.kind == node_kind::op && !n.fused_away && n.written_by < 0 && n.op == op;
  };
  const auto sole = [&](std::int32_t j) { return uses[static_cast<std::size_t>(j)] == 1; };
  // An RMSNORM over whole rows (not per head, not a row window): its output has x's shape.
  const auto norm_of = [&](std::int32_t j) {
    if (!is(j, ir::opcode::rmsnorm)) return false;
    const node& n = nodes[static_cast<std::size_t>(j)];
    const node& x = nodes[static_cast<std::size_t>(n.in[0])];
    return n.numel_rows() == x.numel_rows() && n.params.get(ir::param_key::hidden) == x.shape[static_cast<std::size_t>(x.rank - 1)];
  };
  // An RMSNORM per head of a ROPE (hidden = the rope's head_dim): Qwen3's q/k norm.
  const auto head_norm_of = [&](std::int32_t j, const node& rope) {
    if (!is(j, ir::opcode::rmsnorm)) return false;
    const node& n = nodes[static_cast<std::size_t>(j)];
    const node& x = nodes[static_cast<std::size_t>(n.in[0])];
    return n.numel_rows() == x.numel_rows() && n.params.get(ir::param_key::hidden) == rope.params.get(ir::param_key::head_dim);
  };
  const auto chain_on = [&](std::size_t c) { return f.on[c]; };
  const auto absorb = [&](std::int32_t j) { nodes[static_cast<std::size_t>(j)].fused_away = true; };
  const auto drop_use = [&](std::int32_t j) {
    --uses[static_cast<std::size_t>(j)];
    lost_use[static_cast<std::size_t>(j)] = true;
  };
  // Makes t read the norm's x and weight (its first inputs) and take its params (eps, hidden).
  const auto take_norm = [&](node& t, std::int32_t norm) {
    const node& nm = nodes[static_cast<std::size_t>(norm)];
    t.params = op_params{};
    for (std::int32_t k = 0; k < nm.params.n; ++k) {
      const auto& it = nm.params.items[static_cast<std::size_t>(k)];
      if (it.key == ir::param_key::eps) t.params.set_real(ir::param_key::eps, it.f);
    }
    t.params.set(ir::param_key::hidden, nm.params.get(ir::param_key::hidden));
    t.n_in = 0;
    t.in[static_cast<std::size_t>(t.n_in++)] = nm.in[0];
    t.in[static_cast<std::size_t>(t.n_in++)] = nm.in[1];
    drop_use(norm);
  };
  const auto copy_rope = [&](node& t, const node& r) {
    for (auto key : {ir::param_key::head_dim, ir::param_key::rope_style})
      t.params.set(key, r.params.get(key));
    t.params.set(ir::param_key::n_rot, r.params.get(ir::param_key::n_rot, r.params.get(ir::param_key::head_dim)));
    for (std::int32_t k = 0; k < r.params.n; ++k)
      if (r.params.items[static_cast<std::size_t>(k)].key == ir::param_key::theta)
        t.params.set_real(ir::param_key::theta, r.params.items[static_cast<std::size_t>(k)].f);
    semantics::set_rope_ramp(t.params, semantics::rope_ramp_of(r.params));
  };
  const auto push = [](node& t, std::int32_t j) { t.in[static_cast<std::size_t>(t.n_in++)] = j; };
  const auto eps_of = [&](std::int32_t j) { return nodes[static_cast<std::size_t>(j)].params.get_real(ir::param_key::eps, -1.0); };
  // A per-head norm `hn` of `rope` (sole reader) over a bias-free GEMV_TILE (sole reader) of a whole-row
  // RMSNORM with the same eps: the GEMV, or -1 (chains 10 and 11, Qwen3's q and k).
  const auto normed_projection = [&](std::int32_t hn, const node& rope) -> std::int32_t {
    if (!head_norm_of(hn, rope) || !sole(hn)) return -1;
    const std::int32_t g = nodes[static_cast<std::size_t>(hn)].in[0];
    if (!is(g, ir::opcode::gemv_tile) || !sole(g)) return -1;
    const node& gn = nodes[static_cast<std::size_t>(g)];
    if (gn.n_in != 2 || !norm_of(gn.in[0]) || eps_of(gn.in[0]) != eps_of(hn)) return -1;
    return g;
  };
  // Makes t the fused Qwen3 projection of GEMV g and per-head norm hn: [x, norm_w, W, head_norm_w].
  const auto take_normed_projection = [&](node& t, std::int32_t g, std::int32_t hn, const node& rope) {
    const node& gn = nodes[static_cast<std::size_t>(g)];
    const std::int64_t K = gn.params.get(ir::param_key::K);
    const std::int32_t w = gn.in[1], head_w = nodes[static_cast<std::size_t>(hn)].in[1];
    take_norm(t, gn.in[0]);
    t.params.set(ir::param_key::K, K);
    copy_rope(t, rope);
    push(t, w);
    push(t, head_w);
    absorb(g);
    absorb(hn);
  };

  // Q|K|V (chain 16), before the chains: one row's (a decode step's) three GEMV_TILEs of one whole-row
  // RMSNORM, each the sole reader of its value: q = ROPE(GEMV) (read by anything), k = KV_APPEND(ROPE(GEMV)) and v =
  // KV_APPEND(GEMV), the two caches of one shape and dtype (F32 / F16 / BF16) at one pos, both RoPEs
  // alike over one pos input, the weights of one dtype, all three biased or none. q's ROPE node becomes
  // RMSNORM_GEMV_QKV [x, norm_w, W_q, W_k, W_v, pos(, b_qkv)], whose task also writes the two KV_APPENDs'
  // values (their caches: also_writes / written_by). b_qkv is a weight node made here, named (and so
  // sourced, docs/ir.md §5.1) by the three biases' names joined with '|'; a bias goes once nothing else
  // reads it. Qwen3's form: q's and k's GEMVs (no bias) each read by a per-head RMSNORM (sole reader, the
  // norm's eps) that their ROPE reads, where the schedule fuses head norms into projections (chains 10 and
  // 11); it becomes RMSNORM_GEMV_NORM_QKV [x, norm_w, W_q, W_k, W_v, pos, hn_qk], hn_qk the two head norms'
  // weights joined the same way.
  if (chain_on(16)) {
    std::vector<std::int32_t> reader(count, -1);  // the last node reading each node (the only one, where sole)
    for (std::size_t j = 0; j < count; ++j)
      for (std::int32_t s = 0; s < nodes[j].n_in; ++s) reader[static_cast<std::size_t>(nodes[j].in[static_cast<std::size_t>(s)])] = static_cast<std::int32_t>(j);
    // Per norm: its q, k and v GEMVs (-2 where a role is seen twice); per GEMV, the per-head norm between it
    // and its ROPE (Qwen3's q and k), or -1.
    std::vector<std::int32_t> q_of(count, -1), k_of(count, -1), v_of(count, -1), head_norm(count, -1);
    const auto mark = [](std::int32_t& role, std::int32_t g) { role = role == -1 ? g : -2; };
    for (std::size_t j = 0; j < count; ++j) {
      const auto g = static_cast<std::int32_t>(j);
      if (!is(g, ir::opcode::gemv_tile) || !sole(g) || !norm_of(nodes[j].in[0])) continue;
      const auto norm = static_cast<std::size_t>(nodes[j].in[0]);
      std::int32_t c = reader[j];
      if (c < 0) continue;
      if (is(c, ir::opcode::rmsnorm) && sole(c) && nodes[static_cast<std::size_t>(c)].in[0] == g && chain_on(10) && chain_on(11)) {
        const std::int32_t r = reader[static_cast<std::size_t>(c)];
        if (r < 0 || !is(r, ir::opcode::rope) || nodes[static_cast<std::size_t>(r)].in[0] != c ||
            !head_norm_of(c, nodes[static_cast<std::size_t>(r)]) || nodes[j].n_in != 2 ||
            eps_of(c) != eps_of(static_cast<std::int32_t>(norm)))
          continue;
        head_norm[j] = c;
        c = r;
      }
      const std::int32_t src = head_norm[j] >= 0 ? head_norm[j] : g;  // what the ROPE reads
      if (is(c, ir::opcode::rope) && nodes[static_cast<std::size_t>(c)].in[0] == src) {
        const std::int32_t a = reader[static_cast<std::size_t>(c)];
        if (sole(c) && a >= 0 && is(a, ir::opcode::kv_append) && nodes[static_cast<std::size_t>(a)].in[0] == c) mark(k_of[norm], g);
        else mark(q_of[norm], g);
      } else if (is(c, ir::opcode::kv_append) && nodes[static_cast<std::size_t>(c)].in[0] == g) {
        mark(v_of[norm], g);
      }
    }
    for (std::size_t nm = 0; nm < count; ++nm) {
      const std::int32_t gq = q_of[nm], gk = k_of[nm], gv = v_of[nm];
      if (gq < 0 || gk < 0 || gv < 0) continue;
      const auto at = [&](std::int32_t j) -> const node& { return nodes[static_cast<std::size_t>(j)]; };
      const std::int32_t hq = head_norm[static_cast<std::size_t>(gq)], hk = head_norm[static_cast<std::size_t>(gk)];
      const std::int32_t rq = reader[static_cast<std::size_t>(hq >= 0 ? hq : gq)];
      const std::int32_t rk = reader[static_cast<std::size_t>(hk >= 0 ? hk : gk)];
      const std::int32_t ak = reader[static_cast<std::size_t>(rk)], av = reader[static_cast<std::size_t>(gv)];
      const node &q = at(gq), &k = at(gk), &v = at(gv);
      const node &kc = at(at(ak).in[1]), &vc = at(at(av).in[1]);
      bool ok = q.numel_rows() == 1 && q.n_in == k.n_in && k.n_in == v.n_in && at(q.in[1]).dtype == at(k.in[1]).dtype &&
                at(k.in[1]).dtype == at(v.in[1]).dtype && q.params.get(ir::param_key::K) == k.params.get(ir::param_key::K) &&
                k.params.get(ir::param_key::K) == v.params.get(ir::param_key::K);
      ok = ok && (kc.dtype == ir::dtype::f32 || kc.dtype == ir::dtype::f16 || kc.dtype == ir::dtype::bf16) &&
           kc.dtype == vc.dtype && kc.rank == vc.rank && kc.shape == vc.shape && at(ak).in[1] != at(av).in[1] &&
           at(ak).params.get(ir::param_key::pos) == at(av).params.get(ir::param_key::pos);
      const node &ropeq = at(rq), &ropek = at(rk);
      ok = ok && ropeq.in[1] == ropek.in[1] && ropeq.params.get(ir::param_key::n_rot, -1) == ropek.params.get(ir::param_key::n_rot, -1);
      for (auto key : {ir::param_key::head_dim, ir::param_key::rope_style})
        ok = ok && ropeq.params.get(key) == ropek.params.get(key);
      ok = ok && ropeq.params.get_real(ir::param_key::theta) == ropek.params.get_real(ir::param_key::theta);
      for (auto key : {ir::param_key::rope_low_scale, ir::param_key::rope_ramp_slope, ir::param_key::rope_ramp_offset})
        ok = ok && ropeq.params.get_real(key, 0.0) == ropek.params.get_real(key, 0.0);
      const bool biased = q.n_in == 3, normed = hq >= 0;
      // The weights joined into one composite node (the biases, or Qwen3's two head norms): 1-D weights of
      // one dtype with names (their sources, docs/ir.md §5.1) that fit the joined name.
      std::array<std::int32_t, 3> parts{-1, -1, -1};
      if (biased) parts = {q.in[2], k.in[2], v.in[2]};
      if (normed) parts = {at(hq).in[1], at(hk).in[1], -1};
      ok = ok && normed == (hk >= 0) && !(biased && normed);
      if (ok && parts[0] >= 0) {
        std::size_t name_len = 0;
        for (const std::int32_t p : parts) {
          if (p < 0) continue;
          const node& w = at(p);
          ok = ok && w.kind == node_kind::weight && w.dtype == at(parts[0]).dtype && w.rank == 1 && !w.name.empty();
          name_len += std::size_t{w.name.len} + 1;
        }
        ok = ok && name_len <= name_buf::capacity + 1;
        if (normed) ok = ok && eps_of(hk) == eps_of(hq) && at(parts[0]).shape[0] == ropeq.params.get(ir::param_key::head_dim) &&
                        at(parts[1]).shape[0] == ropeq.params.get(ir::param_key::head_dim);
      }
      if (!ok) continue;
      std::int32_t joined = -1;
      if (parts[0] >= 0) {  // the composite weight, appended (no reference into `nodes` is held across it)
        node b;
        b.kind = node_kind::weight;
        b.dtype = at(parts[0]).dtype;
        b.rank = 1;
        b.layer = at(parts[0]).layer;
        for (const std::int32_t p : parts) {
          if (p < 0) continue;
          if (!b.name.empty()) b.name.append("|");
          b.name.append(at(p).name.view());
          b.shape[0] += at(p).shape[0];
          if (--uses[static_cast<std::size_t>(p)] == 0) nodes[static_cast<std::size_t>(p)].fused_away = true;
        }
        joined = static_cast<std::int32_t>(nodes.size());
        nodes.push_back(b);
        uses.push_back(1);
        lost_use.push_back(false);
      }
      node& t = nodes[static_cast<std::size_t>(rq)];
      const node r = t;
      const std::int64_t K = at(gq).params.get(ir::param_key::K), pos = at(ak).params.get(ir::param_key::pos);
      const std::int32_t wq = at(gq).in[1], wk = at(gk).in[1], wv = at(gv).in[1];
      t.op = normed ? ir::opcode::rmsnorm_gemv_norm_qkv : ir::opcode::rmsnorm_gemv_qkv;
      take_norm(t, static_cast<std::int32_t>(nm));
      drop_use(static_cast<std::int32_t>(nm));  // read by all three GEMVs
      drop_use(static_cast<std::int32_t>(nm));
      t.params.set(ir::param_key::K, K);
      copy_rope(t, r);
      t.params.set(ir::param_key::pos, pos);
      push(t, wq);
      push(t, wk);
      push(t, wv);
      push(t, r.in[1]);
      if (joined >= 0) push(t, joined);
      t.also_writes = {ak, av};
      nodes[static_cast<std::size_t>(ak)].written_by = rq;
      nodes[static_cast<std::size_t>(av)].written_by = rq;
      for (std::int32_t j : {gq, gk, gv, rk}) absorb(j);
      if (normed) {
        absorb(hq);
        absorb(hk);
      }
    }
  }

  for (std::size_t i = count; i-- > 0;) {
    node& t = nodes[i];
    if (t.kind != node_kind::op || t.fused_away || t.written_by >= 0) continue;
    switch (t.op) {
      case ir::opcode::add: {
        if (!chain_on(1) && !chain_on(8)) break;
        for (std::int32_t s = 1; s >= 0; --s) {
          const std::int32_t g = t.in[static_cast<std::size_t>(s)], r = t.in[static_cast<std::size_t>(1 - s)];
          const node& gn = nodes[static_cast<std::size_t>(g)];
          const node& rn = nodes[static_cast<std::size_t>(r)];
          bool same_shape = gn.rank == t.rank && rn.rank == t.rank;
          for (std::int32_t d = 0; same_shape && d < t.rank; ++d)
            same_shape = gn.shape[static_cast<std::size_t>(d)] == t.shape[static_cast<std::size_t>(d)] &&
                         rn.shape[static_cast<std::size_t>(d)] == t.shape[static_cast<std::size_t>(d)];
          // From a GEMM_TILE (prefill) the GEMV_ADD covers every row and takes the GEMV column tiling.
          const bool matmul = (chain_on(1) && is(g, ir::opcode::gemv_tile)) || (chain_on(8) && is(g, ir::opcode::gemm_tile));
          if (!matmul || gn.n_in != 2 || !sole(g) || !same_shape) continue;
          t.op = ir::opcode::gemv_add;
          t.params = gn.params;
          t.n_in = 3;
          t.in[0] = gn.in[0];
          t.in[1] = gn.in[1];
          t.in[2] = r;
          absorb(g);
          break;
        }
        break;
      }
      case ir::opcode::silu_mul: {
        if (!chain_on(2) && !chain_on(12)) break;
        const std::int32_t g = t.in[0], u = t.in[1];
        // GEMV_TILEs (decode) or GEMM_TILEs (prefill: the fused op over every row)
        const bool gemvs = chain_on(2) && is(g, ir::opcode::gemv_tile) && is(u, ir::opcode::gemv_tile);
        const bool gemms = chain_on(12) && is(g, ir::opcode::gemm_tile) && is(u, ir::opcode::gemm_tile);
        if ((!gemvs && !gemms) || !sole(g) || !sole(u)) break;
        const node& gn = nodes[static_cast<std::size_t>(g)];
        const node& un = nodes[static_cast<std::size_t>(u)];
        const node& gw = nodes[static_cast<std::size_t>(gn.in[1])];
        const node& uw = nodes[static_cast<std::size_t>(un.in[1])];
        if (gn.n_in != 2 || un.n_in != 2 || gn.in[0] != un.in[0] || !norm_of(gn.in[0]) || gw.dtype != uw.dtype ||
            gw.shape != uw.shape)
          break;
        const std::int64_t K = gn.params.get(ir::param_key::K);
        const std::int32_t wg = gn.in[1], wu = un.in[1], norm = gn.in[0];
        t.op = ir::opcode::rmsnorm_swiglu;
        take_norm(t, norm);
        drop_use(norm);  // read by both GEMVs
        t.params.set(ir::param_key::K, K);
        push(t, wg);
        push(t, wu);
        absorb(g);
        absorb(u);
        break;
      }
      case ir::opcode::kv_append: {
        // [new, cache] -> cache, with `new` a ROPE of a GEMV of an RMSNORM, or a GEMV of an RMSNORM.
        const std::int32_t src = t.in[0], cache = t.in[1];
        const ir::dtype cache_dt = nodes[static_cast<std::size_t>(cache)].dtype;
        // The fused kernel writes F32 / F16 / BF16 rows; a block-quantized cache keeps its KV_APPEND.
        if (cache_dt != ir::dtype::f32 && cache_dt != ir::dtype::f16 && cache_dt != ir::dtype::bf16) break;
        if (chain_on(11) && is(src, ir::opcode::rope) && sole(src)) {
          const node r = nodes[static_cast<std::size_t>(src)];
          if (const std::int32_t g = normed_projection(r.in[0], r); g >= 0) {
            const std::int64_t pos = t.params.get(ir::param_key::pos);
            t.op = ir::opcode::rmsnorm_gemv_norm_kv;
            take_normed_projection(t, g, r.in[0], r);
            t.params.set(ir::param_key::pos, pos);
            push(t, cache);
            push(t, r.in[1]);
            t.in_place = 4;
            absorb(src);
            break;
          }
        }
        if (chain_on(7) && is(src, ir::opcode::rope) && sole(src)) {
          const node& rn = nodes[static_cast<std::size_t>(src)];
          const std::int32_t norm = rn.in[0];
          if (head_norm_of(norm, rn) && sole(norm)) {
            const node r = rn;
            const std::int64_t pos = t.params.get(ir::param_key::pos);
            t.op = ir::opcode::rmsnorm_rope_kv;
            take_norm(t, norm);
            copy_rope(t, r);
            t.params.set(ir::param_key::pos, pos);
            push(t, cache);
            push(t, r.in[1]);
            t.in_place = 2;
            absorb(src);
            absorb(norm);
            break;
          }
        }
        // Chains 4 and 5 over a GEMV_TILE (decode), 14 and 15 over a GEMM_TILE (prefill: every row).
        std::int32_t rope = -1, g = src;
        if (is(src, ir::opcode::rope) && sole(src) && (chain_on(4) || chain_on(14))) {
          rope = src;
          g = nodes[static_cast<std::size_t>(src)].in[0];
        }
        const bool over_gemv = is(g, ir::opcode::gemv_tile) && chain_on(rope >= 0 ? 4 : 5);
        const bool over_gemm = is(g, ir::opcode::gemm_tile) && chain_on(rope >= 0 ? 14 : 15);
        if ((!over_gemv && !over_gemm) || !sole(g) || !norm_of(nodes[static_cast<std::size_t>(g)].in[0])) break;
        const node& gn = nodes[static_cast<std::size_t>(g)];
        const std::int64_t K = gn.params.get(ir::param_key::K), pos = t.params.get(ir::param_key::pos);
        const std::int32_t w = gn.in[1], bias = gn.n_in > 2 ? gn.in[2] : -1;
        t.op = ir::opcode::rmsnorm_gemv_kv;
        take_norm(t, gn.in[0]);
        t.params.set(ir::param_key::K, K);
        t.params.set(ir::param_key::pos, pos);
        push(t, w);
        push(t, cache);
        t.in_place = 3;
        if (rope >= 0) {
          const node& rn = nodes[static_cast<std::size_t>(rope)];
          copy_rope(t, rn);
          push(t, rn.in[1]);
          absorb(rope);
        } else {
          t.params.set(ir::param_key::head_dim, gn.shape[static_cast<std::size_t>(gn.rank - 1)]);
          t.params.set(ir::param_key::n_rot, 0);
        }
        if (bias >= 0) push(t, bias);
        absorb(g);
        break;
      }
      case ir::opcode::rope: {
        if (chain_on(10)) {
          const node r = t;
          if (const std::int32_t g = normed_projection(r.in[0], r); g >= 0) {
            t.op = ir::opcode::rmsnorm_gemv_norm_rope;
            take_normed_projection(t, g, r.in[0], r);
            push(t, r.in[1]);
            break;
          }
        }
        if (chain_on(6) && head_norm_of(t.in[0], t) && sole(t.in[0])) {
          const node r = t;
          const std::int32_t norm = t.in[0], pos = t.in[1];
          t.op = ir::opcode::rmsnorm_rope;
          take_norm(t, norm);
          copy_rope(t, r);
          push(t, pos);
          absorb(norm);
          break;
        }
        const std::int32_t g = t.in[0], pos = t.in[1];
        const bool over_gemv = chain_on(3) && is(g, ir::opcode::gemv_tile), over_gemm = chain_on(13) && is(g, ir::opcode::gemm_tile);
        if ((!over_gemv && !over_gemm) || !sole(g) || !norm_of(nodes[static_cast<std::size_t>(g)].in[0])) break;
        const node& gn = nodes[static_cast<std::size_t>(g)];
        const std::int64_t K = gn.params.get(ir::param_key::K);
        const std::int32_t w = gn.in[1], bias = gn.n_in > 2 ? gn.in[2] : -1;
        const node r = t;  // the ROPE's params, before t becomes the fused op
        t.op = ir::opcode::rmsnorm_gemv_rope;
        take_norm(t, gn.in[0]);
        t.params.set(ir::param_key::K, K);
        copy_rope(t, r);
        push(t, w);
        push(t, pos);
        if (bias >= 0) push(t, bias);
        absorb(g);
        break;
      }
      case ir::opcode::gemv_tile:
      case ir::opcode::gemm_tile: {  // a GEMM_TILE (prefill) gives RMSNORM_GEMV over every row, the GEMV column tiling
        if (!chain_on(t.op == ir::opcode::gemv_tile ? 0 : 9) || !norm_of(t.in[0])) break;
        const std::int64_t K = t.params.get(ir::param_key::K);
        const std::int32_t w = t.in[1], bias = t.n_in > 2 ? t.in[2] : -1;
        t.op = ir::opcode::rmsnorm_gemv;
        take_norm(t, t.in[0]);
        t.params.set(ir::param_key::K, K);
        push(t, w);
        if (bias >= 0) push(t, bias);
        break;
      }
      case ir::opcode::rmsnorm:
        // Every reader fused it into its own prologue.
        if (lost_use[i] && uses[i] == 0) t.fused_away = true;
        break;
      default: break;
    }
  }
}

/// Lowers a node store; `cfg` is recorded in the program. Pages and SM assignment are graph::lower's
/// follow-up passes. Costs O(nodes * fan-in) and allocates only what the program keeps; task labels
/// and counter notes stay empty (validate names tasks OPNAME#id; buffers carry the names).
constexpr ir::program lower_fused(const std::vector<node>& nodes, const ir::schedule_config& cfg);

constexpr ir::program lower_nodes(const std::vector<node>& nodes, const ir::schedule_config& cfg) {
  const fusion_set fusions = read_fusions(cfg);
  if (!fusions.any()) return lower_fused(nodes, cfg);
  std::vector<node> fused = nodes;
  fuse_nodes(fused, fusions);
  return lower_fused(fused, cfg);
}

/// Lowers a node store whose fusion is done (fused_away nodes get no buffer and no task).
constexpr ir::program lower_fused(const std::vector<node>& nodes, const ir::schedule_config& cfg) {
  ir::program p;
  const std::size_t n_nodes = nodes.size();
  std::vector<std::int32_t> buf(n_nodes, -1), ctr(n_nodes, -1), ntasks(n_nodes, 0);
  const tiling_choice tiling = read_tiling(cfg);

  std::size_t n_buffers = 0, n_ops = 0, n_tasks = 0;
  for (const node& n : nodes) {
    if (n.fused_away) continue;
    n_buffers += (n.kind != node_kind::op || n.in_place < 0) ? 1 : 0;
    if (n.kind == node_kind::op && n.written_by < 0) {
      ++n_ops;
      n_tasks += static_cast<std::size_t>(plan_tiles(n, tiling).count());
    }
  }
  p.buffers.reserve(n_buffers);
  p.counters.reserve(n_ops);
  p.tasks.reserve(n_tasks);

  for (std::size_t i = 0; i < n_nodes; ++i) {
    const node& n = nodes[i];
    if (n.fused_away) continue;
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
    if (n.kind != node_kind::op || n.fused_away || n.written_by >= 0) continue;
    ctr[i] = static_cast<std::int32_t>(p.counters.size());
    p.counters.emplace_back().id = ctr[i];  // in place: no temporary counter to move
    std::size_t n_out = 1;  // its own value, then those it also writes (their readers wait on its counter)
    for (const std::int32_t a : n.also_writes)
      if (a >= 0) {
        ctr[static_cast<std::size_t>(a)] = ctr[i];
        ++n_out;
      }

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
    for (const std::int32_t a : n.also_writes)
      if (a >= 0) ntasks[static_cast<std::size_t>(a)] = ntasks[i];
    const bool tiled = column_tiled(n.op);
    const std::int64_t k = n.params.get(ir::param_key::K);
    const std::int64_t rows = n.numel_rows();
    const std::int64_t cols = n.shape[static_cast<std::size_t>(n.rank - 1)];
    const int ws = weight_slot(n.op);
    const node* w_node = ws >= 0 ? &nodes[static_cast<std::size_t>(n.in[static_cast<std::size_t>(ws)])] : nullptr;
    const ir::dtype w_dtype = w_node ? w_node->dtype : ir::dtype::f32;
    const std::int64_t weights_read = n.op == ir::opcode::rmsnorm_swiglu ? 2 : 1;  // gate and up
    for (std::int64_t mi = 0; mi < t.m_tiles; ++mi)
      for (std::int64_t ni = 0; ni < t.n_tiles; ++ni) {
        ir::task& tk = p.tasks.emplace_back();  // in place, as the buffers
        tk.id = static_cast<std::int32_t>(p.tasks.size() - 1);
        tk.op = n.op;
        tk.inputs.resize(static_cast<std::size_t>(n.n_in));
        for (std::size_t s = 0; s < static_cast<std::size_t>(n.n_in); ++s) tk.inputs[s] = ins[s];
        tk.outputs.resize(n_out);
        tk.outputs[0] = buf[i];
        for (std::size_t a = 0; a + 1 < n_out; ++a) tk.outputs[a + 1] = buf[static_cast<std::size_t>(n.also_writes[a])];
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
          tk.est_bytes = weights_read * ir::nbytes(w_dtype, nt * k);
          tk.est_flops = weights_read * 2 * mt * nt * k;
        } else if (w_node) {  // the RoPE-fused GEMVs: every column of the weight (Q|K|V: of all three)
          std::int64_t w_rows = w_node->shape[0];
          if (n.op == ir::opcode::rmsnorm_gemv_qkv || n.op == ir::opcode::rmsnorm_gemv_norm_qkv)
            w_rows += nodes[static_cast<std::size_t>(n.in[3])].shape[0] + nodes[static_cast<std::size_t>(n.in[4])].shape[0];
          tk.est_bytes = ir::nbytes(w_dtype, w_rows * k);
          tk.est_flops = 2 * nodes[static_cast<std::size_t>(n.in[0])].numel_rows() * w_rows * k;
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
