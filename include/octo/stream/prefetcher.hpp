// prefetcher: a background reader thread (in front of a layer_reader, or running the caller's read jobs):
// a bounded queue of reads into caller buffers, each completed through a future or a callback, errors
// handed to whoever waits.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "octo/stream/layer_reader.hpp"
#include "octo/stream/manifest.hpp"

namespace octo::stream {

/// Called on the reader thread when a request finishes: the raw bytes read, or the error (then bytes 0).
/// It must not throw and should be short (it delays the next read).
using read_callback = std::function<void(std::uint64_t bytes, std::exception_ptr error)>;
/// A read the caller describes itself (run on the reader thread): returns the bytes it read.
using read_job = std::function<std::uint64_t()>;

/// One reader thread; requests are served in submission order.
/// @code
///   octo::stream::prefetcher pf(m, {}, 2);
///   auto next = pf.submit_layer(l + 1, slot_b);   // returns at once unless 2 reads are already queued
///   ... compute layer l from slot_a ...
///   next.get();                                   // rethrows the read's octo::error, if any
/// @endcode
class prefetcher {
 public:
  /// `depth`: most requests queued or in flight; submit blocks beyond it (>= 1).
  explicit prefetcher(const manifest& m, reader_options o = {}, std::size_t depth = 2);
  /// Without a manifest: only read jobs (the engine's reads from a GGUF mapping or a model source).
  explicit prefetcher(std::size_t depth);
  /// shutdown().
  ~prefetcher();
  prefetcher(const prefetcher&) = delete;
  prefetcher& operator=(const prefetcher&) = delete;

  /// Queues a read of `f` into `dst` (see layer_reader::read). The future yields f.raw_bytes or rethrows.
  std::future<std::uint64_t> submit(const file_entry& f, std::span<std::byte> dst);
  std::future<std::uint64_t> submit_layer(std::int64_t layer, std::span<std::byte> dst);
  /// The same with a callback instead of a future.
  void submit(const file_entry& f, std::span<std::byte> dst, read_callback done);
  /// Queues `job`; `what` names it in the cancellation error.
  std::future<std::uint64_t> submit(read_job job, std::string what);
  void submit(read_job job, std::string what, read_callback done);

  /// Requests queued or in flight.
  std::size_t pending() const;
  /// Waits until every request submitted so far has completed.
  void drain();
  /// Lets the read in flight finish, fails every queued request with octo::error("... cancelled"), joins
  /// the thread. Submitting afterwards throws octo::error. Idempotent.
  void shutdown();

 private:
  struct request {
    read_job read;
    std::string what;
    read_callback done;
  };
  void run();
  layer_reader& reader();

  std::optional<layer_reader> reader_;
  std::size_t depth_;
  mutable std::mutex mu_;
  std::condition_variable cv_work_;   // reader thread: work arrived or stop
  std::condition_variable cv_space_;  // submitters / drain: a request finished
  std::deque<request> queue_;
  std::size_t in_flight_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace octo::stream
