// octo::kv_append: writes new K or V rows [T, kv_width] into a KV cache [S, kv_width] at row `pos`, in
// place. The returned handle is the cache after the append: attention reading it waits for the append.
#pragma once

#include "octo/graph/op_support.hpp"

namespace octo {
namespace detail {
template <class C, class K>
struct kv_width_matches {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = may_equal(C::static_extent(1), K::static_extent(1));
};
template <class C, class K>
struct kv_rows_fit {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = C::static_extent(0) == dyn || K::static_extent(0) == dyn ||
                                        K::static_extent(0) <= C::static_extent(0);
};
}  // namespace detail

/// @code
///   auto kc = octo::kv_append(k_cache, k_new, /*pos=*/0);   // kc: the cache, appended
/// @endcode
template <class CD, class CE, class KD, class KE>
constexpr tensor<CD, CE> kv_append(const tensor<CD, CE>& cache, const tensor<KD, KE>& kv_new, std::int64_t pos) {
  static_assert(CE::rank() == 2 && KE::rank() == 2, "octo::kv_append: cache is [S, width] and kv_new [T, width]");
  static_assert(detail::is_float_dtype<KD>::value, "octo::kv_append: kv_new must be float");
  static_assert(detail::kv_width_matches<CE, KE>::value, "octo::kv_append: kv_new's width differs from the cache's");
  static_assert(detail::kv_rows_fit<CE, KE>::value, "octo::kv_append: more new rows than the cache holds");
  graph* g = detail::owner_of("octo::kv_append: operands from different graphs", cache, kv_new);
  if (g->at(cache.node).kind != detail::node_kind::kv_cache &&
      !(g->at(cache.node).kind == detail::node_kind::op && g->at(cache.node).op == ir::opcode::kv_append))
    detail::graph_error("octo::kv_append: the first operand must be a KV cache (graph::kv_cache)");
  if (cache.extent(1) != kv_new.extent(1))
    detail::shape_error("octo::kv_append: kv_new's width differs from the cache's", cache.ext, kv_new.ext);
  if (pos < 0 || pos + kv_new.extent(0) > cache.extent(0))
    detail::shape_error("octo::kv_append: pos + T exceeds the cache's rows", cache.ext, kv_new.ext);
  detail::op_params p;
  p.set(ir::param_key::pos, pos);
  return detail::make_op<CD>(g, ir::opcode::kv_append, {kv_new.node, cache.node}, p, cache.dtype(),
                             cache.ext, /*in_place=*/1);
}

}  // namespace octo
