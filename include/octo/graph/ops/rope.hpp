// octo::rope: rotary position embedding of each head of x [T, n*head_dim] at positions pos (i32 [T]);
// NeoX (rotate-half) for Qwen2/Qwen3/HF llama, interleaved pairs for GGUF llama. Lowers to a ROPE task.
#pragma once

#include "octo/graph/op_support.hpp"
#include "octo/semantics/rope.hpp"

namespace octo {

enum class rope_style : std::int32_t { neox = 0, interleaved = 1 };

struct rope_params {
  std::int64_t head_dim = 0;
  double theta = 10000.0;
  rope_style style = rope_style::neox;
  std::int64_t n_rot = 0;  // rotated dims per head; 0 means head_dim
  semantics::rope_ramp ramp{};  // frequency scaling (Llama 3.1+); the default scales nothing
};

namespace detail {
template <class X, class P>
struct rope_rows_match {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = may_equal(X::static_extent(0), P::static_extent(0));
};
}  // namespace detail

/// @code
///   auto qr = octo::rope(q, pos, {.head_dim = 64, .theta = 1e6});
/// @endcode
template <class XD, class XE, class PD, class PE>
constexpr auto rope(const tensor<XD, XE>& x, const tensor<PD, PE>& pos, const rope_params& rp) {
  static_assert(XE::rank() == 2, "octo::rope: x must be [T, heads*head_dim]");
  static_assert(PE::rank() == 1, "octo::rope: pos must be rank 1 [T]");
  static_assert(detail::is_float_dtype<XD>::value, "octo::rope: x must be float");
  static_assert(detail::is_index_dtype<PD>::value, "octo::rope: pos must be i32");
  static_assert(detail::rope_rows_match<XE, PE>::value, "octo::rope: x has T rows and pos must have T entries");
  detail::check_float("octo::rope: x must be float", x.dtype());
  detail::check_index("octo::rope: pos must be i32", pos.dtype());
  if (x.extent(0) != pos.extent(0))
    detail::shape_error("octo::rope: x has T rows and pos must have T entries", x.ext, pos.ext);
  if (rp.head_dim <= 0 || x.extent(1) % rp.head_dim != 0)
    detail::shape_error("octo::rope: x's width must be a multiple of head_dim", x.ext);
  const std::int64_t n_rot = rp.n_rot == 0 ? rp.head_dim : rp.n_rot;
  if (n_rot <= 0 || n_rot > rp.head_dim || n_rot % 2 != 0)
    detail::graph_error("octo::rope: n_rot must be even and within head_dim");
  if (!(rp.theta > 0.0)) detail::graph_error("octo::rope: theta must be positive");
  if (!(rp.ramp.low_scale > 0.0f && rp.ramp.low_scale <= 1.0f))
    detail::graph_error("octo::rope: the ramp's low_scale must be in (0, 1]");
  detail::op_params p;
  p.set(ir::param_key::head_dim, rp.head_dim);
  p.set_real(ir::param_key::theta, rp.theta);
  p.set(ir::param_key::rope_style, static_cast<std::int64_t>(rp.style));
  if (n_rot != rp.head_dim) p.set(ir::param_key::n_rot, n_rot);
  semantics::set_rope_ramp(p, rp.ramp);
  return detail::make_op<f32>(detail::owner_of("octo::rope: operands from different graphs", x, pos),
                              ir::opcode::rope, {x.node, pos.node}, p, ir::dtype::f32, x.ext);
}

}  // namespace octo
