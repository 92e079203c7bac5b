// octo::freeze<make>(): a program as a constexpr *variable*. A constexpr variable cannot own heap
// memory, so the program is encoded into a std::array of words (sized by a first evaluation of
// `make`) and thawed back into an ir::program wherever one is needed, in constant evaluation or not.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "octo/ir/program.hpp"

namespace octo {
namespace detail {

/// One traversal of a program, shared by the encoder and the decoder so the two cannot drift.
template <class Archive>
constexpr void transfer(Archive& ar, ir::program& p) {
  ar.seq(p.meta, [&](ir::meta_entry& m) {
    ar.str(m.key);
    ar.str(m.value);
    ar.num(m.raw_json);
  });
  ar.num(p.has_target);
  {
    auto& t = p.target;
    ar.str(t.name);
    ar.num(t.sm_arch);
    ar.num(t.num_sms);
    ar.num(t.smem_bytes_per_sm);
    ar.num(t.smem_bytes_per_block_optin);
    ar.num(t.regs_per_sm);
    ar.num(t.max_threads_per_sm);
    ar.num(t.max_regs_per_thread);
    ar.num(t.l2_bytes);
    ar.num(t.hbm_bytes);
    ar.num(t.hbm_bandwidth_gbs);
    ar.num(t.fp16_tflops);
    ar.num(t.clock_ghz);
    ar.num(t.supports_cooperative);
    ar.num(t.wddm_tdr);
    ar.str(t.note);
  }
  ar.seq(p.buffers, [&](ir::buffer& b) {
    ar.num(b.id);
    ar.str(b.name);
    ar.num(b.kind);
    ar.num(b.dtype);
    ar.seq(b.shape, [&](std::int64_t& e) { ar.num(e); });
    ar.num(b.space);
    ar.str(b.source);
  });
  ar.seq(p.counters, [&](ir::counter& c) {
    ar.num(c.id);
    ar.num(c.init);
    ar.str(c.note);
  });
  ar.seq(p.tasks, [&](ir::task& t) {
    ar.num(t.id);
    ar.num(t.op);
    ar.seq(t.inputs, [&](std::int32_t& v) { ar.num(v); });
    ar.seq(t.outputs, [&](std::int32_t& v) { ar.num(v); });
    ar.num(t.out_counter);
    ar.seq(t.waits, [&](ir::wait& w) {
      ar.num(w.counter);
      ar.num(w.threshold);
    });
    ar.seq(t.params.items, [&](ir::param& q) {
      ar.num(q.key);
      ar.num(q.is_real);
      ar.num(q.i);
      ar.num(q.f);
      ar.str(q.unknown_name);
    });
    ar.num(t.sm);
    ar.num(t.est_bytes);
    ar.num(t.est_flops);
    ar.str(t.label);
  });
  ar.num(p.has_pages);
  ar.seq(p.pages.buffer_to_page, [&](ir::page_binding& b) {
    ar.num(b.buffer);
    ar.num(b.page);
  });
  ar.seq(p.pages.pages, [&](ir::page& g) {
    ar.num(g.id);
    ar.num(g.space);
    ar.num(g.nbytes);
    ar.num(g.live_start);
    ar.num(g.live_end);
  });
  ar.num(p.has_config);
  {
    auto& c = p.config;
    ar.seq(c.tiling, [&](ir::tile_setting& t) {
      ar.str(t.archetype);
      ar.str(t.key);
      ar.num(t.value);
    });
    ar.seq(c.fusion_grouping, [&](std::vector<ir::text>& g) { ar.seq(g, [&](ir::text& s) { ar.str(s); }); });
    ar.num(c.sm_assignment);
    ar.seq(c.sm_map, [&](ir::sm_binding& b) {
      ar.num(b.task);
      ar.num(b.sm);
    });
    ar.num(c.pipelining_depth);
    ar.num(c.page_allocation);
    ar.num(c.threads_per_block);
    ar.num(c.smem_bytes_per_block);
  }
  ar.str(p.ir_version);
  ar.str(p.abi_version);
}

template <class T>
constexpr std::int64_t to_word(const T& v) {
  if constexpr (std::is_same_v<T, double>) return std::bit_cast<std::int64_t>(v);
  else if constexpr (std::is_enum_v<T>) return static_cast<std::int64_t>(v);
  else return static_cast<std::int64_t>(v);
}

struct word_writer {
  std::vector<std::int64_t> out;
  template <class T>
  constexpr void num(T& v) { out.push_back(to_word(v)); }
  constexpr void str(ir::text& t) {
    const std::string_view s = t.view();
    out.push_back(static_cast<std::int64_t>(s.size()));
    // eight chars a word: frozen programs stay small
    for (std::size_t i = 0; i < s.size(); i += 8) {
      std::uint64_t w = 0;
      for (std::size_t k = 0; k < 8 && i + k < s.size(); ++k)
        w |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[i + k])) << (8 * k);
      out.push_back(static_cast<std::int64_t>(w));
    }
  }
  template <class V, class F>
  constexpr void seq(V& v, F f) {
    out.push_back(static_cast<std::int64_t>(v.size()));
    for (auto& e : v) f(e);
  }
};

struct word_reader {
  const std::int64_t* in;
  std::size_t at = 0;
  template <class T>
  constexpr void num(T& v) {
    const std::int64_t w = in[at++];
    if constexpr (std::is_same_v<T, double>) v = std::bit_cast<double>(w);
    else if constexpr (std::is_same_v<T, bool>) v = w != 0;
    else v = static_cast<T>(w);
  }
  constexpr void str(ir::text& t) {
    const auto n = static_cast<std::size_t>(in[at++]);
    t = ir::text{};
    for (std::size_t i = 0; i < n; i += 8) {
      const auto w = static_cast<std::uint64_t>(in[at++]);
      for (std::size_t k = 0; k < 8 && i + k < n; ++k) t += static_cast<char>((w >> (8 * k)) & 0xff);
    }
  }
  template <class V, class F>
  constexpr void seq(V& v, F f) {
    v.clear();
    v.resize(static_cast<std::size_t>(in[at++]));
    for (auto& e : v) f(e);
  }
};

constexpr std::vector<std::int64_t> encode(ir::program p) {
  word_writer w;
  transfer(w, p);
  return std::move(w.out);
}

}  // namespace detail

/// A program stored in a fixed-size array of words; see octo::freeze.
template <std::size_t Words>
struct frozen_program {
  std::array<std::int64_t, Words> words{};

  /// The program back as an ir::program (heap-owning, so transient in constant evaluation).
  constexpr ir::program thaw() const {
    ir::program p;
    detail::word_reader r{words.data()};
    detail::transfer(r, p);
    return p;
  }
  constexpr operator ir::program() const { return thaw(); }  // so octo::validate(frozen) reads naturally
};

/// Evaluates `Make` (a constexpr callable returning an ir::program) at compile time and keeps the
/// result in a constexpr-storable form. `Make` runs twice: once to size the array, once to fill it.
/// @code
///   constexpr auto prog = octo::freeze<[] { octo::graph g; ...; return g.lower(); }>();
///   static_assert(octo::validate(prog).ok);
///   octo::ir::program p = prog;   // at run time: hand it to a VM
/// @endcode
template <auto Make>
consteval auto freeze() {
  constexpr std::size_t n = detail::encode(Make()).size();
  frozen_program<n> f;
  const auto w = detail::encode(Make());
  for (std::size_t i = 0; i < n; ++i) f.words[i] = w[i];
  return f;
}

}  // namespace octo
