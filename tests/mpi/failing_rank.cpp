// Run by mpirun with two ranks (ctest: mpi_silent_rank, mpi_throwing_rank; tests/mpi/expect_failure.sh
// checks that the job fails, in bounded time, with the failing stage's line). Rank 0 generates; rank 1
// `silent`: builds its stage and then never answers (a hung or lost peer: rank 0's receive times out
// after 2 s and aborts the job); `throws`: its stage cannot be built (a budget too small), so it fails
// while rank 0 waits.
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <octo/runtime/engine.hpp>
#include <octo/runtime/mpi_link.hpp>

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "silent" && mode != "throws") {
    std::fprintf(stderr, "usage: failing_rank silent|throws\n");
    return 2;
  }
  auto link = std::make_shared<octo::runtime::mpi_link>(&argc, &argv, std::chrono::seconds(2));
  try {
    octo::runtime::engine_options o;
    o.vm = octo::runtime::backend::reference;
    o.ctx = 64;
    o.link = link;
    if (mode == "throws" && link->rank() == 1) o.vram_budget = 1024;
    octo::runtime::engine e(std::filesystem::path(OCTO_SHARED_DATA_DIR) / "stories260K" / "stories260K.gguf", o);
    if (mode == "silent" && link->rank() == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(60));  // never takes part; killed by the abort
      return 0;
    }
    const std::int32_t bos[1] = {1};
    (void)e.generate(bos, 8, {});
    std::fprintf(stderr, "rank %d: generated without its peer\n", link->rank());
    return 0;
  } catch (const std::exception& ex) {
    link->fail(ex.what());
  }
}
