// mpi_link: the stages of a pipeline as MPI ranks (one stage per rank, launched with mpirun), for
// engine_options::link. Built as octo::mpi where CMake finds MPI (Open MPI: libopenmpi-dev).
// docs/multi-gpu.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string_view>

#include "octo/runtime/engine.hpp"

namespace octo::runtime {

/// MPI_COMM_WORLD as a pipeline: rank r runs stage r. Every send and receive waits at most `timeout`
/// (then octo::error naming the peer: it failed, hangs or is gone); fail() prints its line and calls
/// MPI_Abort, so one failed rank ends every rank.
/// @code
///   octo::runtime::engine_options o;
///   o.link = std::make_shared<octo::runtime::mpi_link>(&argc, &argv, std::chrono::seconds(300));
///   octo::runtime::engine e("model.gguf", o);   // this rank's layers only
///   auto ids = e.generate(prompt, 64, {});       // the same tokens on every rank
/// @endcode
class mpi_link final : public stage_link {
 public:
  /// MPI_Init (once per process). octo::error when MPI cannot start.
  mpi_link(int* argc, char*** argv, std::chrono::milliseconds timeout);
  ~mpi_link() override;  // MPI_Finalize
  mpi_link(const mpi_link&) = delete;
  mpi_link& operator=(const mpi_link&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int to, std::span<const std::byte> message) override;
  void receive(int from, std::span<std::byte> message) override;
  /// Prints `why` on stderr and aborts every rank (MPI_Abort); does not return.
  void fail(std::string_view why) override;

 private:
  int rank_ = 0, size_ = 1;
  std::chrono::milliseconds timeout_;
};

}  // namespace octo::runtime
