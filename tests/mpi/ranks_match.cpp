// Run by mpirun with two ranks (ctest: mpi_ranks_match): tiny-qwen and stories260K split over two MPI
// ranks, one stage each (lavapipe, and stories260K on the reference VM too), give every rank the
// tokens and logits of one process running the whole model, bit for bit.
#include <doctest/doctest.h>

#include "../support/pipeline_check.hpp"
#include "../support/test_data.hpp"

#include <chrono>
#include <filesystem>
#include <memory>

#include <octo/runtime/engine.hpp>
#include <octo/runtime/mpi_link.hpp>

namespace fs = std::filesystem;
using namespace octo;

namespace {

/// MPI_COMM_WORLD, started once for the process (finalized at exit).
std::shared_ptr<runtime::mpi_link> world() {
  static auto link = std::make_shared<runtime::mpi_link>(nullptr, nullptr, std::chrono::seconds(120));
  return link;
}

runtime::engine_options opts(runtime::backend vm) {
  runtime::engine_options o;
  o.vm = vm;
  o.ctx = 128;
  o.prefill_chunk = 8;
  o.vulkan.pipeline_cache_dir.push_back('-');
  return o;
}

void check_model(const fs::path& model, runtime::backend vm) {
  CAPTURE(model.filename().string());
  CAPTURE(int(vm));
  auto o = opts(vm);
  o.link = world();
  REQUIRE(o.link->size() == 2);
  runtime::engine split(model, o);
  CHECK(split.stage_layers().size() == 1);  // this rank's stage only
  const auto prompt =
      split.model().tokenizer().encode("Once upon a time there was a little girl who lived in a village near the", true);
  const auto got = test::run_pipeline_case(split, prompt, 16);
  runtime::engine one(model, opts(vm));  // the oracle: the whole model in this process
  test::check_same_run(got, test::run_pipeline_case(one, prompt, 16));
}

}  // namespace

TEST_CASE("two MPI ranks, one stage each, give one process's tokens and logits on every rank") {
  check_model(fs::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen" / "tiny-qwen.gguf", runtime::backend::vulkan);
  check_model(test::stories260k_gguf(), runtime::backend::vulkan);
  check_model(test::stories260k_gguf(), runtime::backend::reference);
}
