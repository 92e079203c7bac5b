// Planners for ATTENTION_TILE and ATTENTION_COMBINE (shaders/attention_combine.comp). ATTENTION_TILE
// has four kernels: shaders/attention_coop.comp (prefill on tensor cores, the `fast` precision),
// shaders/attention_decode.comp (one decode row over a 16-bit cache: flash-decoding,
// one workgroup per KV head and chunk of keys, chunks merged in the same dispatch), shaders/attention_rows.comp (prefill:
// blocks of query rows share K/V tiles) and shaders/attention.comp (the rest: one workgroup per query
// row and head, its subgroups each taking a share of the keys; partial = 1 for split-K).
#include "vulkan/kernels/planner_support.hpp"

namespace octo::vm::vulkan::kernels {

namespace {

enum class attention_choice { split, flash, adaptive };

/// Flash-decoding's form for long contexts (plan_attention's range past 8192 keys): at most 64 chunks a KV
/// head, so a chunk takes several passes, each loading the next pass's K and V while it computes
/// (attention_decode.comp PIPE), and merges that load 16 chunks' partials a round trip.
struct flash_form {
  std::uint32_t wg = 0;  // 128 or 256; 0 chooses (below)
  bool long_keys = false;
};
constexpr std::uint32_t kLongChunks = 64, kLongMergeBatch = 16;

/// `split`: the split-key (or, for prefill, the row-block) kernel; `flash`: flash-decoding where the
/// task and the device allow it, else the same as `split`.
kernel_launch plan_attention_as(const task_context& c, attention_choice choice_made, flash_form form = {}) {
  const std::uint32_t flash_wg = form.wg;
  auto q = input(c, 0);
  auto k = input(c, 1);
  auto v = input(c, 2);
  auto o = output(c);
  require_dtype(c, q, {ir::dtype::f32}, "q");
  require_dtype(c, o, {ir::dtype::f32}, "output");
  require_dtype(c, k, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16, ir::dtype::q8_0}, "k cache");
  require_dtype(c, v, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16, ir::dtype::q8_0}, "v cache");
  const std::uint32_t hd = param_u32(c, ir::param_key::head_dim, 1);
  const std::uint32_t nh = param_u32(c, ir::param_key::n_heads, 1);
  const std::uint32_t nkv = param_u32(c, ir::param_key::n_kv_heads, 1);
  require(c, nh % nkv == 0, "n_heads is not a multiple of n_kv_heads");
  require(c, hd <= 512, "head_dim above 512 is not supported");
  const std::uint32_t kv_start = param_u32(c, ir::param_key::kv_start);
  const std::uint32_t kv_len = param_u32(c, ir::param_key::kv_len);
  const std::uint32_t causal = opt_u32(c, ir::param_key::causal, 0);
  const std::uint32_t q_pos = opt_u32(c, ir::param_key::q_pos, 0);
  const std::uint32_t partial = opt_u32(c, ir::param_key::partial, 0);
  const std::int64_t row = std::int64_t{nh} * hd;
  require(c, q.numel() % row == 0, "q numel is not T x n_heads x head_dim");
  const std::int64_t T = q.numel() / row;
  const std::int64_t kv_row = std::int64_t{nkv} * hd;
  require(c, k.numel() % kv_row == 0 && v.numel() == k.numel(), "k / v caches are not [S, n_kv_heads x head_dim]");
  require(c, (k.dtype() != ir::dtype::q8_0 && v.dtype() != ir::dtype::q8_0) || kv_row % 32 == 0,
          "a Q8_0 cache needs n_kv_heads x head_dim (" + std::to_string(kv_row) + ") to be a multiple of 32");
  const std::int64_t slots = k.numel() / kv_row;
  require(c, std::int64_t{kv_start} + kv_len <= slots,
          "kv_start + kv_len = " + std::to_string(std::int64_t{kv_start} + kv_len) + " exceeds the cache's " +
              std::to_string(slots) + " slots");
  require(c, o.numel() == (partial ? T * nh * (hd + 2) : T * row),
          partial ? "output is not [T, n_heads, head_dim + 2]" : "output numel differs from q's");
  const std::uint32_t rows_heads = u32(c, T * nh, "rows x heads");
  // Coarse spec constants (head_dim rounded to 32, two group counts) keep the number of pipelines
  // small: each is compiled once per shape (slow on CPU drivers).
  const std::uint32_t hd_max = (hd + 31) / 32 * 32;
  const bool sg = use_subgroups(c.device);
  const auto dt_code = [](const tensor_ref& t) { return static_cast<std::uint32_t>(t.dtype()); };
  const bool vec_k = k.address % 16 == 0 && k.dtype() != ir::dtype::q8_0 &&
                     (k.dtype() == ir::dtype::f32 ? hd % 4 == 0 : hd % 8 == 0);
  const bool vec_v = v.address % 16 == 0 && v.dtype() != ir::dtype::q8_0 && hd % 4 == 0;
  // Decode (one row, full output) over a 16-bit cache: flash-decoding (shaders/attention_decode.comp),
  // one workgroup of decode_wg invocations per (KV head, chunk of keys) for the whole GQA group, so K/V
  // are read once per step; the chunks merge in the same dispatch through the task's scratch (partials
  // and one arrival counter per KV head). A chunk is kDecodeKeys keys (one pass) until a head has
  // kMaxChunks of them; past that a chunk takes several passes. Its workgroup count follows the position
  // (an indirect dispatch), so a short context wakes only the chunks its keys fill whatever the cache's
  // size. When it runs instead of the split-key kernel is plan_attention's choice (below). F32 and Q8_0
  // caches, GQA groups above 16 (a workgroup has 16 softmax lanes a head) and head_dims whose 4-dim units
  // do not tile the workgroup (below) take the split-key kernel.
  const auto is16 = [](ir::dtype d) { return d == ir::dtype::f16 || d == ir::dtype::bf16; };
  const std::uint32_t group = nh / nkv;
  const bool flash = choice_made != attention_choice::split;
  // Keys a chunk (one pass): 64; OCTO_ATTENTION_KEYS=32|128 for one device run to compare. Chunks a KV
  // head, at most: as many as hold 8192 keys in one pass each.
  const std::uint32_t kDecodeKeys = number_knob(c, "OCTO_ATTENTION_KEYS", {32, 64, 128}, 64);
  const std::uint32_t kMaxChunks = 8192 / kDecodeKeys;
  const std::uint64_t max_keys = static_cast<std::uint64_t>(slots - kv_start);  // >= kv_len (checked above)
  std::uint32_t max_chunks =
      static_cast<std::uint32_t>(std::clamp<std::uint64_t>((max_keys + kDecodeKeys - 1) / kDecodeKeys, 1, kMaxChunks));
  if (form.long_keys) max_chunks = std::min(max_chunks, kLongChunks);
  if (const char* e = std::getenv("OCTO_ATTENTION_CHUNKS"); e && std::atoi(e) > 0)  // tests: several passes a chunk
    max_chunks = std::min<std::uint32_t>(max_chunks, static_cast<std::uint32_t>(std::atoi(e)));
  max_chunks += max_chunks % 2;  // even: the partial sums start on a 16-byte boundary (the shader's layout)
  // The V phase's lanes: hd / 4 per key group, wg / (hd / 4) key groups that split a pass's keys; the
  // softmax's 16 lanes a head. Shared memory: the query rows, a pass's scores, the softmax lanes'
  // exchange, the key groups' sums, the merge weights.
  const std::uint32_t dim_units = hd / 4;
  const auto shared_bytes = [&](std::uint32_t wg) {
    return 4ull * (std::uint64_t{group} * hd + std::uint64_t{group} * kDecodeKeys + 19ull * group +
                   4ull * wg * group + 2ull * max_chunks * group) + 16;
  };
  const auto fits = [&](std::uint32_t wg) {
    return hd % 8 == 0 && hd <= 256 && wg % dim_units == 0 && kDecodeKeys % (wg / dim_units) == 0 && group <= wg / 16 &&
           c.device.max_workgroup_size_x >= wg && shared_bytes(wg) <= c.device.max_shared_memory;
  };
  // Invocations a workgroup: 128, or 256 where the group's outputs (group x hd / 4 four-dim units) are
  // more than 128, so that each invocation still has one output to merge (in registers: the shader) and
  // scores and accumulates half as much. OCTO_ATTENTION_WG=128|256 forces one.
  const std::uint32_t decode_wg = number_knob(c, "OCTO_ATTENTION_WG", {128, 256},
                                               flash_wg ? flash_wg : group * dim_units > 128 && fits(256) ? 256 : 128);
  if (flash && partial == 0 && T == 1 && is16(k.dtype()) && is16(v.dtype()) && fits(decode_wg) &&
      q.address % 16 == 0 && o.address % 16 == 0 && k.address % 16 == 0 && v.address % 8 == 0 &&
      c.scratch_address % 16 == 0) {
    // An indirect dispatch's count is one dimension (at most 65535 workgroups, the least devices give):
    // more KV heads than that holds take the split-key kernel.
    if (std::uint64_t{nkv} * max_chunks <= 65535) {
      const std::uint64_t scratch_floats =
          (nkv + 3ull) / 4 * 4 + 2ull * nkv * group * max_chunks + std::uint64_t{nkv} * max_chunks * group * hd;
      kernel_launch l;
      l.shader = "attention_decode";
      // The merges' batch (chunks a round trip) and the pipelined passes: the long form's (flash_form),
      // else 8 and off. OCTO_ATTENTION_MERGE_BATCH=8|16 and OCTO_ATTENTION_PIPE=0|1 force them (device
      // runs, tests).
      const std::uint32_t merge_batch =
          number_knob(c, "OCTO_ATTENTION_MERGE_BATCH", {8, kLongMergeBatch}, form.long_keys ? kLongMergeBatch : 8);
      const std::uint32_t pipe = number_knob(c, "OCTO_ATTENTION_PIPE", {0, 1}, form.long_keys ? 1 : 0);
      l.spec_constants = {decode_wg, hd, kDecodeKeys, dt_code(k), dt_code(v), group, max_chunks, merge_batch, pipe};
      // One workgroup per KV head and chunk the keys visible at this position need, computed on the device
      // (kernel_registry.hpp, indirect_groups): keys = clamp(pos + end0 - kv_start, 0, slots - kv_start)
      // with end0 the pass's end at position 0, chunks = clamp(ceil(keys / kDecodeKeys), 1, max_chunks).
      // groups.x is the most it can be (nkv x max_chunks), which a direct dispatch launches; the kernel takes
      // its chunk count from the dispatch (gl_NumWorkGroups), so it is right for any count the rule gives.
      const std::int64_t end0 = causal ? std::min<std::int64_t>(std::int64_t{kv_start} + kv_len, std::int64_t{q_pos} + 1)
                                       : std::int64_t{kv_start} + kv_len;
      indirect_groups rule;
      rule.add = static_cast<std::int32_t>(std::clamp<std::int64_t>(end0 - kv_start, INT32_MIN, INT32_MAX));
      rule.limit = static_cast<std::uint32_t>(max_keys);
      rule.div = kDecodeKeys;
      rule.min = 1;
      rule.max = max_chunks;
      rule.mul = nkv;
      l.groups = {nkv * max_chunks, 1, 1};
      l.indirect = rule;
      l.scratch_bytes = 4 * scratch_floats;
      l.push_constants = push_builder{}
                             .addr(q.address).addr(k.address).addr(v.address).addr(o.address)
                             .addr(c.globals_address).addr(c.scratch_address)
                             .u32(nh).u32(nkv).u32(hd).u32(kv_start).u32(kv_len).u32(causal).u32(q_pos)
                             .u32(u32(c, slots, "slots"))
                             .f32(static_cast<float>(c.task.params.get_real(ir::param_key::scale, 0.0)))
                             .take();
      return l;
    }
  }
  const auto push = [&] {
    return push_builder{}
        .addr(q.address).addr(k.address).addr(v.address).addr(o.address).addr(c.globals_address)
        .u32(u32(c, T, "tokens")).u32(nh).u32(nkv).u32(hd).u32(kv_start).u32(kv_len)
        .u32(causal).u32(q_pos).u32(partial).u32(u32(c, slots, "slots"))
        .f32(static_cast<float>(c.task.params.get_real(ir::param_key::scale, 0.0)))
        .take();
  };
  // Prefill (many rows, full outputs): shaders/attention_rows.comp, a block of 16 rows per workgroup
  // sharing each K/V tile, so a head's K/V are read T/16 times instead of T times. Its shared memory:
  // 16 query rows, the K and V tiles (f32; rows padded by 16 bytes), the probabilities and one float
  // per invocation. Tiles of 32 keys where that fits the device's shared memory, else 16.
  constexpr std::uint32_t rows_wg = 128, rows_block = 16;
  const auto rows_shared = [&](std::uint64_t kt) {
    return 4 * (rows_block * (hd_max + 4) + kt * (hd_max + 4) + kt * hd_max + rows_block * kt + rows_wg + 2 * rows_block);
  };
  // Prefill on tensor cores (shaders/attention_coop.comp) at the `fast` precision (docs/precision.md),
  // 16-bit caches, head_dim a multiple of 16 up to 128: 16 query rows a subgroup, rg row groups of 16
  // a workgroup and ks subgroups splitting each group's keys (merged in the workgroup), key tiles of 64,
  // 32 or 16 (below). On the H100 at 512 rows (benchmarks/results/2026-11-27-h100-gemm-coop,
  // call7), without key splits, a layer took 42 us against attention_rows' 76 (0.5B, head_dim 64; 53 us
  // with 2 row groups) and 85 against 154 (1.5B, head_dim 128). OCTO_ATTENTION_ROWS=16|32|64 (rows a
  // workgroup) and OCTO_ATTENTION_SPLIT=1|2|4 (subgroups a row group) ask for a form;
  // OCTO_ATTENTION_PREFILL=rows keeps attention_rows.
  const std::string_view prefill_env = [] {
    const char* e = std::getenv("OCTO_ATTENTION_PREFILL");
    return std::string_view(e ? e : "");
  }();
  if (!prefill_env.empty() && prefill_env != "coop" && prefill_env != "rows")
    fail(c, "OCTO_ATTENTION_PREFILL='" + std::string(prefill_env) + "' is not coop or rows");
  const bool coop_ok = prefill_env != "rows" && c.fast_precision && c.device.cooperative_matrix_nv &&
                       c.device.subgroup_size == 32 && c.device.subgroup_shuffle && partial == 0 && T >= 16 &&
                       is16(k.dtype()) && is16(v.dtype()) && hd % 16 == 0 && hd <= 128 &&
                       q.address % 16 == 0 && k.address % 16 == 0 && v.address % 16 == 0;
  if (coop_ok) {
    // attention_coop's shared memory: the query rows or a round's K and V tiles (f16, rows padded by 16
    // bytes), each subgroup's 16 rows of scores / P.V (f32, max(kt, hd) + 4) and of probabilities (f16).
    // The softmax in registers (spec constant 7, REGS: no scores, probabilities or P.V through shared
    // memory) by default where the VM's probe found the mma fragments' elements (device_facts::
    // coop_mma_layout; the factor's pair order in spec constant 8), without key splits: on the H100 the
    // prefill attention of a 512-token prompt took 914 against 2,048 us (Qwen3-0.6B), 833 against 1,598
    // (1.5B) and 485 against 734 (0.5B, head_dim 64, against its split form); pp512 +4 to +12%
    // (benchmarks/results/2026-12-07-h100-attn-regs, calls 4 and 5). OCTO_ATTENTION_REGS=0 keeps the
    // shared-memory form.
    const bool regs_asked = number_knob(c, "OCTO_ATTENTION_REGS", {0, 1}, 1) == 1 && c.device.coop_mma_layout;
    const auto coop_shared = [&](std::uint64_t rg, std::uint64_t ks, std::uint64_t kt) {
      const std::uint64_t sh = hd / 8 + 1, nsg = rg * ks;
      const std::uint64_t kv_area = 16 * std::max<std::uint64_t>(16 * rg, 2 * ks * kt) * sh;
      if (regs_asked && ks == 1) return kv_area + 16 + 4;
      return kv_area + 16 * 16 * nsg * (kt / 8 + 1) + 4 * 16 * nsg * (std::max<std::uint64_t>(kt, hd) + 4);
    };
    // The default: 64 rows a workgroup, one subgroup each 16; head_dim 64 and under, 32 rows with their
    // keys split over 2 subgroups (H100, 512 rows: 0.5B's layer 31 us against 38;
    // benchmarks/results/2026-12-06-h100-attn-split, call1); with the softmax in registers, unsplit.
    const bool small_heads = hd <= 64 && !regs_asked;
    std::uint32_t rg = number_knob(c, "OCTO_ATTENTION_ROWS", {16, 32, 64}, small_heads ? 32 : 64) / 16;
    const std::uint32_t ks = number_knob(c, "OCTO_ATTENTION_SPLIT", {1, 2, 4}, small_heads ? 2 : 1);
    const bool regs = regs_asked && ks == 1;
    while (rg > 1 && (coop_shared(rg, ks, 16) > c.device.max_shared_memory || 32 * rg * ks > c.device.max_workgroup_size_x))
      rg /= 2;
    // Key tiles of 64, 32 or 16: the largest whose round an invocation loads in at most 8 16-byte units of
    // K and 8 of V (kt * hd / 8 / (32 rg) each; it holds them all before storing any), within shared
    // memory. More spilled: with 32 rows and 2 key splits, tiles of 64 at head_dim 128 ran the 1.5B's
    // layer in 150 us against 57 without splits (call1).
    std::uint32_t kt = 64;
    while (kt > 16 && (std::uint64_t{kt} * hd / 8 > 8ull * 32 * rg || coop_shared(rg, ks, kt) > c.device.max_shared_memory))
      kt /= 2;
    if (coop_shared(rg, ks, kt) <= c.device.max_shared_memory && c.device.max_workgroup_size_x >= 32 * rg * ks) {
      const std::uint64_t blocks = (static_cast<std::uint64_t>(T) + 16 * rg - 1) / (16 * rg);
      kernel_launch l;
      l.shader = "attention_coop";
      // OCTO_ATTENTION_PREFETCH=1: the next key tile loaded during this one's products (spec constant 5).
      const std::uint32_t prefetch = number_knob(c, "OCTO_ATTENTION_PREFETCH", {0, 1}, 0);
      l.spec_constants = {32 * rg * ks, hd, kt, k.dtype() == ir::dtype::bf16 ? 1u : 0u, v.dtype() == ir::dtype::bf16 ? 1u : 0u,
                          prefetch, ks, regs ? 1u : 0u, regs ? c.device.coop_factor_order : 0u};
      l.groups = grid(blocks * nh);
      l.push_constants = push();
      return l;
    }
  }
  const std::uint32_t rows_kt = rows_shared(32) <= c.device.max_shared_memory ? 32 : 16;
  const bool rows_vec = is16(k.dtype()) && is16(v.dtype()) && hd % 8 == 0 && k.address % 16 == 0 && v.address % 16 == 0;
  if (sg && partial == 0 && T >= 8 && rows_shared(rows_kt) <= c.device.max_shared_memory &&
      c.device.max_workgroup_size_x >= rows_wg) {
    const std::uint64_t blocks = (static_cast<std::uint64_t>(T) + rows_block - 1) / rows_block;
    kernel_launch l;
    l.shader = "attention_rows";
    l.spec_constants = {rows_wg, hd_max, dt_code(k), dt_code(v), rows_kt, rows_vec ? 1u : 0u};
    l.groups = grid(blocks * nh);
    l.push_constants = push();
    return l;
  }
  std::uint32_t wg = 0, lanes = 0;
  if (sg) {
    // Groups of one subgroup each. Decode has few rows, so the parallelism must come from the keys:
    // 32 groups (a 4096-slot cache is 4 blocks of keys per group). Prefill rows fill the device alone,
    // and a small cache has few blocks: 4 groups. Each group's accumulator takes hd_max floats of shared
    // memory.
    lanes = std::max<std::uint32_t>(1, c.device.subgroup_size);
    require(c, std::has_single_bit(lanes), "the device's subgroup size is not a power of two");
    const std::uint64_t max_keys = static_cast<std::uint64_t>(slots - kv_start);
    std::uint64_t groups = rows_heads >= 512 || max_keys <= std::uint64_t{8} * lanes ? 4 : 32;
    const std::uint32_t shared_budget = std::min<std::uint32_t>(c.device.max_shared_memory, 32768) - 2048 - 4 * hd_max;
    while (groups > 1 && (groups * (hd_max + 2) * 4 + groups * lanes * 4 > shared_budget ||
                          groups * lanes > c.device.max_workgroup_size_x))
      groups /= 2;
    wg = static_cast<std::uint32_t>(groups) * lanes;
    require(c, wg <= c.device.max_workgroup_size_x, "the device's subgroup is larger than its largest workgroup");
  } else {
    wg = workgroup_size(c.device, 64);  // the fallback: one group of the whole workgroup
    lanes = wg;
  }
  kernel_launch l;
  l.shader = sg ? "attention" : "attention_nosg";
  l.spec_constants = {wg, hd_max, lanes, dt_code(k), dt_code(v), vec_k ? 1u : 0u, vec_v ? 1u : 0u};
  l.groups = grid(rows_heads);
  l.push_constants = push();
  return l;
}

}  // namespace

// Decode attention is two kernels by default, both recorded, the one to run chosen on the device at every
// step from the keys visible (an indirect dispatch each, kernel_registry.hpp: indirect_groups n_min /
// n_max): the split-key kernel up to kSwitchKeys keys, flash-decoding beyond. On the H100
// (benchmarks/results/2026-11-27-h100-gemv/call3, bench_attention, us a layer at 128 / 1k / 4k / 32k keys)
// flash-decoding is ahead from 1k keys on every Qwen2.5 shape (0.5B 9.1 / 10.0 / 12.4 / 33.6 against
// split-key's 7.6 / 17.4 / 40.3 / 209; 1.5B 10.3 / 12.1 / 16.1 / 37.9 against 8.3 / 22.0 / 59.3 / 371;
// 7B 11.1 / 26.4 / 43.5 / 293 against 8.4 / 22.1 / 59.5 / 372) and split-key only at the shortest
// contexts. OCTO_ATTENTION=split|flash|auto (the default) forces one; OCTO_ATTENTION_SWITCH=N moves the
// switch (tests cross it on small caches).
kernel_launch plan_attention(const task_context& c) {
  constexpr std::uint32_t kSwitchKeys = 128;
  attention_choice choice = attention_choice::adaptive;
  if (const char* e = std::getenv("OCTO_ATTENTION"); e && *e) {
    const std::string_view v(e);
    if (v == "split") choice = attention_choice::split;
    else if (v == "flash") choice = attention_choice::flash;
    else if (v != "auto") fail(c, "OCTO_ATTENTION='" + std::string(v) + "' is not split, flash or auto");
  }
  if (choice != attention_choice::adaptive) return plan_attention_as(c, choice);
  kernel_launch flash = plan_attention_as(c, attention_choice::flash);
  if (flash.shader != "attention_decode") return flash;  // not a decode row flash-decoding serves
  std::uint32_t switch_keys = kSwitchKeys;
  if (const char* e = std::getenv("OCTO_ATTENTION_SWITCH"); e && std::atoi(e) > 0) switch_keys = static_cast<std::uint32_t>(std::atoi(e));
  // A cache that never holds more keys than the switch has no use for flash-decoding (nor its gate).
  if (flash.indirect->limit <= switch_keys) return plan_attention_as(c, attention_choice::split);
  kernel_launch split = plan_attention_as(c, attention_choice::split);
  indirect_groups n_of = *flash.indirect;  // n: the keys visible at the position
  flash.indirect->n_min = switch_keys + 1;
  indirect_groups fixed;
  fixed.add = n_of.add;
  fixed.limit = n_of.limit;
  fixed.min = fixed.max = split.groups[0];
  fixed.n_max = switch_keys;
  split.indirect = fixed;
  flash.alternatives.push_back(std::move(split));
  // 256-invocation workgroups (the chooser above) ran 1.5B Q8_0 decode 2.6-3.8% faster than 128 at 1k-4k
  // keys and 10% slower at 16k, where a chunk takes several passes (the H200,
  // benchmarks/results/2026-11-29-h200-qkv, call5): past the keys single passes hold (kMaxChunks chunks of
  // kDecodeKeys, 8192), the 128-invocation kernel runs instead, a third range of positions.
  // OCTO_ATTENTION_WIDE_KEYS=N moves that switch (tests); OCTO_ATTENTION_WG forces one width everywhere.
  const char* forced_wg = std::getenv("OCTO_ATTENTION_WG");
  // Past 8192 keys the flash kernel takes its long form (flash_form: the 128-invocation kernel, the
  // third range above where the group's outputs take 256): on the H200 (bench_attention, us
  // a layer at 16k / 32k keys) 0.5B 26.8 / 36.0 -> 16.9 / 23.5, 1.5B 28.1 / 37.9 -> 23.7 / 34.8, 7B 56.5 /
  // 90.6 -> 35.0 / 58.1; at 1k-4k keys its pipelined passes cost 1-7% a layer and 1.6-1.7% of a 512-token
  // prompt's decode, so shorter contexts keep the single-pass chunks (benchmarks/results/2026-12-01-h200-grid, call2). OCTO_ATTENTION_LONG=0 keeps
  // the short form at every context.
  std::uint32_t long_keys = 8192;  // OCTO_ATTENTION_LONG_KEYS=N moves it (tests)
  if (const char* e = std::getenv("OCTO_ATTENTION_LONG_KEYS"); e && std::atoi(e) > 0) long_keys = static_cast<std::uint32_t>(std::atoi(e));
  const bool long_on = number_knob(c, "OCTO_ATTENTION_LONG", {0, 1}, 1) == 1;
  if (flash.spec_constants.at(0) == 256 && !(forced_wg && *forced_wg)) {
    std::uint32_t wide_keys = 8192;
    if (const char* e = std::getenv("OCTO_ATTENTION_WIDE_KEYS"); e && std::atoi(e) > 0) wide_keys = static_cast<std::uint32_t>(std::atoi(e));
    kernel_launch narrow = plan_attention_as(c, attention_choice::flash, {128, long_on});
    if (narrow.shader == "attention_decode" && flash.indirect->limit > wide_keys) {
      flash.indirect->n_max = wide_keys;
      narrow.indirect->n_min = std::max(wide_keys, switch_keys) + 1;
      flash.alternatives.push_back(std::move(narrow));
    }
  } else if (long_on && flash.indirect->limit > long_keys && !(forced_wg && *forced_wg)) {
    // 128-invocation flash-decoding (the 0.5B's GQA 7 x head_dim 64) takes the long form past long_keys.
    kernel_launch far = plan_attention_as(c, attention_choice::flash, {128, true});
    if (far.shader == "attention_decode") {
      flash.indirect->n_max = long_keys;
      far.indirect->n_min = std::max(long_keys, switch_keys) + 1;
      flash.alternatives.push_back(std::move(far));
    }
  }
  return flash;
}

kernel_launch plan_attention_combine(const task_context& c) {
  auto o = output(c);
  require_dtype(c, o, {ir::dtype::f32}, "output");
  const std::size_t n = c.task.inputs.size();
  require(c, n >= 2 && n <= 8, "needs 2 to 8 partial buffers");
  auto first = input(c, 0);
  const auto& shape = first.buf->shape;
  require(c, shape.size() >= 2 && shape.back() > 2, "partials are not [T, n_heads, head_dim + 2]");
  const std::int64_t hd = shape.back() - 2;
  const std::int64_t nh = shape[shape.size() - 2];
  const std::int64_t T = first.numel() / (nh * (hd + 2));
  require(c, o.numel() == T * nh * hd, "output numel is not T x n_heads x head_dim");
  push_builder p;
  for (std::size_t i = 0; i < 8; ++i) {
    if (i < n) {
      auto t = input(c, i);
      require_dtype(c, t, {ir::dtype::f32}, "partial");
      require(c, t.numel() == first.numel(), "partials differ in size");
      p.addr(t.address);
    } else {
      p.addr(0);
    }
  }
  const std::uint32_t wg = workgroup_size(c.device, 256);
  kernel_launch l;
  l.shader = "attention_combine";
  l.spec_constants = {wg};
  l.groups = stride_grid(static_cast<std::uint64_t>(o.numel()), wg);
  l.push_constants = p.addr(o.address)
                         .u32(static_cast<std::uint32_t>(n)).u32(u32(c, T, "tokens")).u32(u32(c, nh, "heads"))
                         .u32(u32(c, hd, "head_dim"))
                         .take();
  return l;
}

}  // namespace octo::vm::vulkan::kernels
