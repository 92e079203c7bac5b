// octo::graph: the builder users write a transformer with. Inputs, weights (named by their GGUF key),
// KV caches and outputs are typed handles; ops are free functions; lower() flattens once at the root.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "octo/detail/constexpr_text.hpp"
#include "octo/graph/dtype.hpp"
#include "octo/graph/extents.hpp"
#include "octo/graph/lower.hpp"
#include "octo/graph/node.hpp"
#include "octo/graph/tensor.hpp"
#include "octo/ir/page_allocator.hpp"
#include "octo/ir/program.hpp"
#include "octo/ir/sm_assignment.hpp"
#include "octo/ir/schedule_config.hpp"

namespace octo {

/// A typed dataflow graph. Everything is constexpr, so a graph can be built and lowered inside a
/// constant expression (a static_assert) as well as at run time from a model file's config.
/// @code
///   octo::graph g;
///   auto x = g.input<octo::f32>("x", octo::extents<1, 64>{});
///   auto w = g.weight<octo::f16>("q.weight", octo::extents<32, 64>{});
///   g.output("q", octo::gemv(x, w));
///   octo::ir::program p = g.lower(octo::schedule_config{});
/// @endcode
/// Handles point at the graph: keep it alive, and do not copy or move it while using them.
class graph {
 public:
  constexpr graph() = default;
  graph(const graph&) = delete;             // handles point at this object
  graph& operator=(const graph&) = delete;

  /// A model input (IO_INPUT), e.g. token ids or positions.
  template <class DType, extents_type Extents>
  constexpr tensor<DType, Extents> input(std::string_view name, Extents e) {
    static_assert(!DType::is_dynamic, "octo::graph::input: give the dtype (octo::f32, octo::i32, ...)");
    return leaf<DType>(detail::node_kind::input, name, e, DType::code);
  }

  /// A weight (WEIGHT), named by its GGUF / state-dict key, which becomes the buffer's `source`.
  template <class DType, extents_type Extents>
  constexpr tensor<DType, Extents> weight(std::string_view key, Extents e) {
    static_assert(detail::is_weight_dtype<DType>::value,
                  "octo::graph::weight: a weight's dtype must be float or block-quantized");
    static_assert(!DType::is_dynamic, "octo::graph::weight<any_dtype>: pass the dtype as a value");
    return leaf<DType>(detail::node_kind::weight, key, e, DType::code);
  }
  /// A weight whose dtype is a run-time value (e.g. read from a GGUF file).
  template <extents_type Extents>
  constexpr tensor<any_dtype, Extents> weight(ir::dtype dt, std::string_view key, Extents e) {
    if (!detail::is_weight_code(dt))
      detail::graph_error("octo::graph::weight: a weight's dtype must be float or block-quantized");
    return leaf<any_dtype>(detail::node_kind::weight, key, e, dt);
  }

  /// A KV cache (KV_CACHE): persistent across passes, written in place by octo::kv_append.
  template <class DType, extents_type Extents>
  constexpr tensor<DType, Extents> kv_cache(std::string_view name, Extents e) {
    static_assert(detail::is_float_dtype<DType>::value && !DType::is_dynamic,
                  "octo::graph::kv_cache: a KV cache holds a float dtype");
    static_assert(Extents::rank() == 2, "octo::graph::kv_cache: a KV cache is [positions, kv_heads*head_dim]");
    return leaf<DType>(detail::node_kind::kv_cache, name, e, DType::code);
  }

  /// A KV cache whose dtype is a run-time value (models::build_options::kv_dtype): F32, F16, BF16, or
  /// Q8_0 (GGUF blocks of 32 along each row, so the row must be a multiple of 32).
  template <extents_type Extents>
  constexpr tensor<any_dtype, Extents> kv_cache(ir::dtype dt, std::string_view name, Extents e) {
    static_assert(Extents::rank() == 2, "octo::graph::kv_cache: a KV cache is [positions, kv_heads*head_dim]");
    if (dt != ir::dtype::f32 && dt != ir::dtype::f16 && dt != ir::dtype::bf16 && dt != ir::dtype::q8_0)
      detail::graph_error("octo::graph::kv_cache: a KV cache is F32, F16, BF16 or Q8_0");
    if (dt == ir::dtype::q8_0 && e.extent(1) % 32 != 0)
      detail::graph_error("octo::graph::kv_cache: a Q8_0 KV cache needs kv_heads*head_dim to be a multiple of 32");
    return leaf<any_dtype>(detail::node_kind::kv_cache, name, e, dt);
  }

  /// Marks `t` as a model output (IO_OUTPUT) called `name`. `t` must be computed by an op.
  template <class DType, class Extents>
  constexpr void output(std::string_view name, const tensor<DType, Extents>& t) {
    detail::node& n = at_checked(t, "octo::graph::output");
    if (n.kind != detail::node_kind::op || n.in_place >= 0)
      detail::graph_error("octo::graph::output: only a value computed by an op can be an output");
    if (n.is_output) detail::graph_error("octo::graph::output: this tensor is already an output");
    n.is_output = true;
    n.name = detail::name_buf(name);
  }

  /// Tags the nodes created from now on with a model layer (the tasks' `layer` param); -1 for none.
  constexpr void set_layer(std::int32_t layer) { layer_ = layer; }

  /// Lowers the graph into a program: buffers, one counter per op, waits, tiles from `cfg`, then
  /// pages for the activations (`cfg.page_allocation`, unless none).
  constexpr ir::program lower(const ir::schedule_config& cfg = {}) const {
    ir::program p = detail::lower_nodes(nodes_, cfg);
    if (cfg.page_allocation != ir::page_allocation_mode::none) {
      p.pages = ir::allocate_pages(p, cfg.page_allocation);
      p.has_pages = true;
    }
    return p;
  }
  /// As lower(cfg), for a GPU: records the target and assigns every task an SM (`cfg.sm_assignment`).
  constexpr ir::program lower(const ir::schedule_config& cfg, const ir::gpu_target& target) const {
    ir::program p = lower(cfg);
    p.has_target = true;
    p.target = target;
    p.set_meta("gpu", target.name.view());
    ir::assign_sms(p, cfg, target.num_sms);
    return p;
  }

  // ---- for op implementations ---------------------------------------------------------------------
  constexpr std::size_t size() const { return nodes_.size(); }
  constexpr const detail::node& at(std::int32_t i) const { return nodes_[static_cast<std::size_t>(i)]; }
  constexpr void rename(std::int32_t i, std::string_view name) {
    auto& n = nodes_[static_cast<std::size_t>(i)];
    if (n.kind != detail::node_kind::op || n.in_place >= 0)
      detail::graph_error("octo::tensor::named: only op results can be renamed (leaves keep their key)");
    if (!n.is_output) n.name = detail::name_buf(name);
  }
  /// Appends an op node reading `inputs` (node indices); returns its index.
  constexpr std::int32_t add_op(ir::opcode op, std::initializer_list<std::int32_t> inputs, const detail::op_params& params,
                                ir::dtype dt, const std::int64_t* shape, std::int32_t rank,
                                std::int32_t in_place = -1) {
    detail::node& n = nodes_.emplace_back();  // in place: no temporary node to copy
    n.kind = detail::node_kind::op;
    n.op = op;
    for (auto i : inputs) n.in[static_cast<std::size_t>(n.n_in++)] = i;
    n.params = params;
    n.dtype = dt;
    for (std::int32_t i = 0; i < rank; ++i) n.shape[static_cast<std::size_t>(i)] = shape[i];
    n.rank = rank;
    n.layer = layer_;
    n.in_place = in_place;
    return static_cast<std::int32_t>(nodes_.size() - 1);
  }

 private:
  template <class DType, class Extents>
  constexpr tensor<DType, Extents> leaf(detail::node_kind kind, std::string_view name, const Extents& e,
                                        ir::dtype dt) {
    // Duplicate names are validate()'s to report: a check here would make building quadratic.
    if (name.empty()) detail::graph_error("octo::graph: inputs, weights and caches need a name");
    if (!e.is_set()) detail::graph_error("octo::graph: a dynamic extent was not given a value");
    detail::node& n = nodes_.emplace_back();
    n.kind = kind;
    n.dtype = dt;
    for (std::size_t i = 0; i < Extents::rank(); ++i) n.shape[i] = e.extent(i);
    n.rank = static_cast<std::int32_t>(Extents::rank());
    n.name.append(name);
    n.layer = layer_;
    return tensor<DType, Extents>{this, static_cast<std::int32_t>(nodes_.size() - 1), e, dt};
  }
  template <class DType, class Extents>
  constexpr detail::node& at_checked(const tensor<DType, Extents>& t, const char* who) {
    if (t.owner != this || t.node < 0 || static_cast<std::size_t>(t.node) >= nodes_.size())
      detail::graph_error(who);  // a handle of another graph, or a default-constructed one
    return nodes_[static_cast<std::size_t>(t.node)];
  }

  std::vector<detail::node> nodes_;
  std::int32_t layer_ = -1;
};

template <class DType, class Extents>
constexpr tensor<DType, Extents> tensor<DType, Extents>::named(std::string_view name) const {
  if (owner == nullptr) detail::graph_error("octo::tensor::named: an empty handle");
  owner->rename(node, name);
  return *this;
}

}  // namespace octo
