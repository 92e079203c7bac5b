// mpi_link: nonblocking sends and receives polled against a deadline, so a rank that failed, hangs or
// is gone is an error here rather than a wait forever; errors are returned (MPI_ERRORS_RETURN), not fatal.
#include "octo/runtime/mpi_link.hpp"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "octo/error.hpp"

namespace octo::runtime {

namespace {

std::string mpi_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(code, text, &n);
  return std::string(text, std::size_t(n));
}

void check(int code, const std::string& what) {
  if (code != MPI_SUCCESS) throw octo::error("octo: MPI: " + what + ": " + mpi_text(code));
}

std::string seconds(std::chrono::milliseconds t) {
  char s[32];
  std::snprintf(s, sizeof s, "%g s", double(t.count()) / 1000.0);
  return s;
}

/// Polls `req` until it completes or `timeout` passes (then cancels it and throws `late`). Spins at
/// first (a decode step's message is due within milliseconds), then sleeps between polls.
MPI_Status wait_for(MPI_Request& req, std::chrono::milliseconds timeout, const std::string& late) {
  const auto t0 = std::chrono::steady_clock::now();
  MPI_Status st{};
  for (int polls = 0;; ++polls) {
    int done = 0;
    check(MPI_Test(&req, &done, &st), late);
    if (done) return st;
    const auto waited = std::chrono::steady_clock::now() - t0;
    if (waited > timeout) {
      MPI_Cancel(&req);
      throw octo::error("octo: " + late + " in " + seconds(timeout));
    }
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(200));
    else std::this_thread::yield();
  }
}

void check_chunk(std::size_t bytes) {
  if (bytes > std::size_t(INT_MAX))
    throw octo::error("octo: MPI: a message of " + std::to_string(bytes) + " bytes (at most 2 GiB)");
}

}  // namespace

mpi_link::mpi_link(int* argc, char*** argv, std::chrono::milliseconds timeout) : timeout_(timeout) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw octo::error("octo: MPI could not start (run under mpirun)");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "size");
}

mpi_link::~mpi_link() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void mpi_link::send(int to, std::span<const std::byte> message) {
  check_chunk(message.size());
  MPI_Request req{};
  check(MPI_Isend(message.data(), int(message.size()), MPI_BYTE, to, 0, MPI_COMM_WORLD, &req),
        "sending to stage " + std::to_string(to));
  wait_for(req, timeout_, "stage " + std::to_string(to) + " took no message");
}

void mpi_link::receive(int from, std::span<std::byte> message) {
  check_chunk(message.size());
  MPI_Request req{};
  check(MPI_Irecv(message.data(), int(message.size()), MPI_BYTE, from, 0, MPI_COMM_WORLD, &req),
        "receiving from stage " + std::to_string(from));
  MPI_Status st = wait_for(req, timeout_, "no message from stage " + std::to_string(from));
  if (st.MPI_ERROR != MPI_SUCCESS && st.MPI_ERROR != 0)
    throw octo::error("octo: MPI: the message from stage " + std::to_string(from) + ": " + mpi_text(st.MPI_ERROR));
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  if (std::size_t(n) != message.size())
    throw octo::error("octo: a message of " + std::to_string(n) + " bytes from stage " + std::to_string(from) + ", " +
                      std::to_string(message.size()) + " expected");
}

void mpi_link::fail(std::string_view why) {
  std::fprintf(stderr, "%.*s (rank %d of %d: aborting every rank)\n", int(why.size()), why.data(), rank_, size_);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; should it, this rank still ends
}

}  // namespace octo::runtime
