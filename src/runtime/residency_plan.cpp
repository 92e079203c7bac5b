// residency_plan: the greedy first-and-last-layers-first plan, byte formatting and size parsing.
#include "octo/runtime/residency_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include "octo/error.hpp"

namespace octo::runtime {

namespace {

std::uint64_t align_up(std::uint64_t n, std::uint64_t a) { return a <= 1 ? n : (n + a - 1) / a * a; }

// The residency order of seeds/001: 0, L-1, 1, L-2, ...
std::vector<std::size_t> priority_order(std::size_t layers) {
  std::vector<std::size_t> order;
  order.reserve(layers);
  std::size_t lo = 0, hi = layers;
  while (lo < hi) {
    order.push_back(lo++);
    if (lo < hi) order.push_back(--hi);
  }
  return order;
}

std::string ranges(const std::vector<bool>& resident, bool want) {
  std::string r;
  const std::size_t n = resident.size();
  for (std::size_t i = 0; i < n;) {
    if (resident[i] != want) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < n && resident[j + 1] == want) ++j;
    if (!r.empty()) r += ", ";
    r += std::to_string(i);
    if (j > i) r += "-" + std::to_string(j);
    i = j + 1;
  }
  return r.empty() ? "none" : r;
}

}  // namespace

std::vector<std::int64_t> plan_pipeline(std::int64_t layers, std::size_t stages, const std::vector<std::int64_t>& split) {
  if (stages == 0) throw octo::error("octo: a pipeline needs at least one stage");
  if (std::int64_t(stages) > layers)
    throw octo::error("octo: " + std::to_string(stages) + " pipeline stages but the model has only " +
                      std::to_string(layers) + " layers (each stage needs one)");
  std::vector<std::int64_t> counts = split;
  if (counts.empty()) {
    for (std::size_t s = 0; s < stages; ++s)
      counts.push_back(layers / std::int64_t(stages) + (std::int64_t(s) < layers % std::int64_t(stages) ? 1 : 0));
  } else if (counts.size() != stages) {
    throw octo::error("octo: the split names " + std::to_string(counts.size()) + " stages but the pipeline has " +
                      std::to_string(stages));
  }
  std::vector<std::int64_t> first{0};
  for (std::size_t s = 0; s < counts.size(); ++s) {
    if (counts[s] <= 0)
      throw octo::error("octo: the split gives stage " + std::to_string(s) + " " + std::to_string(counts[s]) +
                        " layers (each stage needs at least one)");
    first.push_back(first.back() + counts[s]);
  }
  if (first.back() != layers)
    throw octo::error("octo: the split's stages hold " + std::to_string(first.back()) + " layers but the model has " +
                      std::to_string(layers));
  return first;
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else if (v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::uint64_t parse_bytes(const std::string& text, const std::string& what) {
  const auto bad = [&]() -> std::uint64_t {
    throw octo::error(what + ": '" + text + "' is not a size (e.g. 4GiB, 512MiB, 1.5G, 4096)");
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return bad();
  const std::string number = text.substr(0, i);
  if (std::count(number.begin(), number.end(), '.') > 1 || number == ".") return bad();
  std::string unit;
  for (std::size_t j = i; j < text.size(); ++j) {
    if (text[j] == ' ') continue;
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[j])));
  }
  double scale = 1.0;
  if (!unit.empty() && unit != "b") {
    const char p = unit[0];
    const std::string rest = unit.substr(1);
    if (rest != "" && rest != "b" && rest != "ib") return bad();
    if (p == 'k') scale = 1024.0;
    else if (p == 'm') scale = 1024.0 * 1024.0;
    else if (p == 'g') scale = 1024.0 * 1024.0 * 1024.0;
    else if (p == 't') scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
    else return bad();
  }
  const double v = std::stod(number) * scale;
  if (!(v >= 1.0) || v > 1.8e19) {
    if (v >= 0.0 && v < 1.0) throw octo::error(what + ": '" + text + "' is less than one byte");
    return bad();
  }
  return static_cast<std::uint64_t>(std::llround(v));
}

namespace {

struct planner {
  const residency_inputs& in;
  std::size_t L;
  std::vector<std::size_t> order;
  std::vector<std::uint64_t> prefix, suffix_max;
  std::uint64_t fixed;

  explicit planner(const residency_inputs& i) : in(i), L(i.layer_bytes.size()) {
    if (L == 0) throw octo::error("octo: residency plan: the model has no layers");
    if (in.ring_depth == 0) throw octo::error("octo: residency plan: the ring depth must be at least 1");
    for (std::size_t l = 0; l < L; ++l)
      if (in.layer_bytes[l] == 0) throw octo::error("octo: residency plan: layer " + std::to_string(l) + " has no weights");
    fixed = in.embed_bytes + in.head_bytes + in.kv_bytes + in.activation_bytes;
    order = priority_order(L);
    // k resident layers: the first k of the order; the largest streamed layer is a suffix maximum
    prefix.assign(L + 1, 0);
    for (std::size_t k = 0; k < L; ++k) prefix[k + 1] = prefix[k] + in.layer_bytes[order[k]];
    suffix_max.assign(L + 1, 0);
    for (std::size_t k = L; k-- > 0;) suffix_max[k] = std::max(suffix_max[k + 1], in.layer_bytes[order[k]]);
  }

  std::uint64_t cost(std::size_t k, std::uint64_t& slot, std::uint32_t& depth) const {
    const std::size_t streamed = L - k;
    depth = static_cast<std::uint32_t>(std::min<std::size_t>(in.ring_depth, streamed));
    slot = streamed == 0 ? 0 : align_up(suffix_max[k], in.slot_alignment);
    return fixed + prefix[k] + std::uint64_t(depth) * slot;
  }

  residency_plan make(std::size_t k) const {
    residency_plan p;
    p.budget_bytes = in.vram_budget;
    p.fixed_bytes = fixed;
    p.resident.assign(L, false);
    for (std::size_t i = 0; i < k; ++i) p.resident[order[i]] = true;
    p.resident_layers = static_cast<std::int64_t>(k);
    p.streamed_layers = static_cast<std::int64_t>(L - k);
    p.total_bytes = cost(k, p.slot_bytes, p.ring_depth);
    p.resident_bytes = prefix[k];
    p.ring_bytes = std::uint64_t(p.ring_depth) * p.slot_bytes;
    for (std::size_t l = 0; l < L; ++l)
      if (!p.resident[l]) p.streamed_bytes_per_pass += in.layer_bytes[l];
    return p;
  }
};

}  // namespace

residency_plan plan_with_resident_count(const residency_inputs& in, std::int64_t resident) {
  const planner pl(in);
  if (resident < 0 || resident > static_cast<std::int64_t>(pl.L))
    throw octo::error("octo: residency plan: " + std::to_string(resident) + " resident layers is not in [0, " +
                      std::to_string(pl.L) + "]");
  return pl.make(static_cast<std::size_t>(resident));
}

residency_plan plan_residency(const residency_inputs& in) {
  const planner pl(in);
  const std::size_t L = pl.L;
  std::size_t best = L + 1;
  for (std::size_t k = L + 1; k-- > 0;) {
    std::uint64_t slot = 0;
    std::uint32_t depth = 0;
    if (pl.cost(k, slot, depth) <= in.vram_budget) {
      best = k;
      break;
    }
  }
  if (best == L + 1) {
    std::uint64_t slot = 0;
    std::uint32_t depth = 0;
    const std::uint64_t minimum = pl.cost(0, slot, depth);
    throw octo::error("octo: the VRAM budget of " + format_bytes(in.vram_budget) + " is below the minimum of " +
                      format_bytes(minimum) + " = " + std::to_string(minimum) + " bytes (embedding " + format_bytes(in.embed_bytes) + " + head " +
                      format_bytes(in.head_bytes) + " + KV cache " + format_bytes(in.kv_bytes) + " + activations " +
                      format_bytes(in.activation_bytes) + " + ring " + std::to_string(depth) + " x " +
                      format_bytes(slot) + "); raise --vram-budget, lower --ctx or --ring");
  }
  return pl.make(best);
}

std::string residency_plan::describe() const {
  std::string s;
  s += "residency plan: " + std::to_string(resident_layers) + " of " + std::to_string(resident.size()) +
       " layers resident, " + std::to_string(streamed_layers) + " streamed; " + format_bytes(total_bytes) +
       (budget_bytes > 0 ? " of " + format_bytes(budget_bytes) + " budget\n" : " (no memory budget given)\n");
  s += "  fixed (embedding, head, KV cache, activations): " + format_bytes(fixed_bytes) + "\n";
  s += "  resident layers: " + ranges(resident, true) + " (" + format_bytes(resident_bytes) + ")\n";
  if (streamed_layers > 0) {
    s += "  streamed layers: " + ranges(resident, false) + " (" + format_bytes(streamed_bytes_per_pass) +
         " per token)\n";
    s += "  ring: " + std::to_string(ring_depth) + " x " + format_bytes(slot_bytes) + " = " + format_bytes(ring_bytes) +
         "\n";
  }
  return s;
}

}  // namespace octo::runtime
