// What skipping a layer does to a model's answers (issue 18 item 3, docs/vulkan.md "Control words"): the
// project's tiny-qwen answers the 50 held-out sums of models/tiny-qwen/reference.json greedily with no
// layer skipped, then with each layer skipped in turn (and any sets given), all on one engine whose
// control words switch the layers between runs (nothing recorded again). One JSON line per set: the
// answers still right (the text before the first newline equals the sum), and the continuations
// identical to the unskipped run's.
//
//   bench_layer_skip [--model tiny-qwen.gguf] [--reference reference.json] [--vm vulkan|reference]
//                    [--sets "1;2,3;..."] [--device NAME]
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../bench_support.hpp"
#include "../json_line.hpp"
#include "octo/error.hpp"
#include "octo/runtime/engine.hpp"

namespace {

using octo_bench::json;
using octo_bench::print_json_line;

struct sum_case {
  std::string prompt, answer;
  std::vector<std::int32_t> prompt_ids, greedy_ids;
};

int run(int argc, char** argv) {
  std::filesystem::path model = std::filesystem::path(OCTO_BENCH_SOURCE_DIR) / "models/tiny-qwen/tiny-qwen.gguf";
  std::filesystem::path reference;
  std::string vm_name = "vulkan", sets_arg, device;
  CLI::App app("Skips each layer (and the --sets) of tiny-qwen through control words and scores its held-out\n"
               "sums against the reference answers, one JSON line per skipped set.",
               "bench_layer_skip");
  octo_bench::set_up(app);
  octo_bench::option(app, "--model", "FILE", "a tiny-qwen GGUF (default: models/tiny-qwen/tiny-qwen.gguf of the source tree)",
                     [&](const std::string& v) { model = v; });
  octo_bench::option(app, "--reference", "FILE", "its held-out sums (default: reference.json beside the model)",
                     [&](const std::string& v) { reference = v; });
  app.add_option("--vm", vm_name, "vulkan or reference")->capture_default_str();
  app.add_option("--sets", sets_arg,
                 "layer sets to skip besides none and each single layer, ';'-separated, each a\n"
                 "comma-separated list (e.g. \"4,5;1,2,3\")")
      ->type_name("LIST");
  app.add_option("--device", device, "Vulkan device index or name substring")->type_name("NAME");
  octo_bench::parse_command_line(app, argc, argv);
  if (vm_name != "vulkan" && vm_name != "reference")
    throw octo::error("bench_layer_skip: --vm must be vulkan or reference, not '" + vm_name + "'");
  if (reference.empty()) reference = model.parent_path() / "reference.json";
  std::ifstream in(reference);
  if (!in) throw octo::error("bench_layer_skip: cannot read '" + reference.string() + "'");
  std::vector<sum_case> cases;
  const auto ref = nlohmann::json::parse(in);
  for (const auto& t : ref.at("tests"))
    cases.push_back({t.at("prompt").get<std::string>(), t.at("answer").get<std::string>(),
                     t.at("prompt_ids").get<std::vector<std::int32_t>>(),
                     t.at("greedy_ids").get<std::vector<std::int32_t>>()});

  if (cases.empty()) throw octo::error("bench_layer_skip: '" + reference.string() + "' holds no tests");
  octo::runtime::engine_options o;
  o.vm = vm_name == "vulkan" ? octo::runtime::backend::vulkan : octo::runtime::backend::reference;
  o.ctx = 64;
  o.vulkan.device = device;
  o.vulkan.control_words = true;
  octo::runtime::engine e(model, o);
  const std::int64_t layers = e.model().config().layers;

  std::vector<std::vector<std::int64_t>> sets{{}};
  for (std::int64_t l = 0; l < layers; ++l) sets.push_back({l});
  for (std::size_t p = 0; p < sets_arg.size();) {  // "a,b;c" -> {a, b}, {c}
    auto q = sets_arg.find(';', p);
    if (q == std::string::npos) q = sets_arg.size();
    std::vector<std::int64_t> set;
    for (const auto& x : octo_bench::split(sets_arg.substr(p, q - p))) {
      if (x.empty() || x.find_first_not_of("0123456789") != std::string::npos || x.size() > 9)
        throw octo::error("bench_layer_skip: --sets: '" + x + "' is not a layer index");
      set.push_back(std::stoll(x));
    }
    if (!set.empty()) sets.push_back(set);
    p = q + 1;
  }
  std::vector<std::vector<std::int32_t>> baseline;
  for (const auto& set : sets) {
    e.set_skipped_layers(set);
    int correct = 0, same = 0;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      e.reset();
      const auto ids = e.generate(cases[c].prompt_ids, std::int64_t(cases[c].greedy_ids.size()),
                                  octo::runtime::sampling_params{});
      std::string text = e.model().tokenizer().decode(ids);
      text = text.substr(0, text.find('\n'));
      correct += text == cases[c].answer;
      if (set.empty()) baseline.push_back(ids);
      same += ids == baseline[c];
    }
    json skipped = json::array();
    for (auto l : set) skipped.push_back(l);
    print_json_line({{"name", "layer_skip"}, {"skipped", skipped}, {"layers", layers}, {"cases", cases.size()},
                     {"correct", correct}, {"same_as_unskipped", same}, {"vm", vm_name}, {"device", e.device_name()}});
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "%s\n", ex.what());
    return 1;
  }
}
