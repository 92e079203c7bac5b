// prefetcher: one thread draining a bounded FIFO of reads; completion through promises or callbacks, so a
// read error reaches whoever waits on that read instead of stopping the thread.
#include "octo/stream/prefetcher.hpp"

#include <memory>

#include "octo/error.hpp"

namespace octo::stream {

prefetcher::prefetcher(const manifest& m, reader_options o, std::size_t depth)
    : reader_(std::in_place, m, o), depth_(depth == 0 ? 1 : depth) {
  thread_ = std::thread([this] { run(); });
}

prefetcher::prefetcher(std::size_t depth) : depth_(depth == 0 ? 1 : depth) {
  thread_ = std::thread([this] { run(); });
}

layer_reader& prefetcher::reader() {
  if (!reader_) throw octo::error("prefetcher: no manifest to read layer files from (only read jobs)");
  return *reader_;
}

prefetcher::~prefetcher() { shutdown(); }

void prefetcher::submit(read_job job, std::string what, read_callback done) {
  std::unique_lock lock(mu_);
  cv_space_.wait(lock, [&] { return stop_ || queue_.size() + in_flight_ < depth_; });
  if (stop_) throw octo::error("prefetcher: read of " + what + " submitted after shutdown");
  queue_.push_back({std::move(job), std::move(what), std::move(done)});
  lock.unlock();
  cv_work_.notify_one();
}

std::future<std::uint64_t> prefetcher::submit(read_job job, std::string what) {
  auto p = std::make_shared<std::promise<std::uint64_t>>();
  auto fut = p->get_future();
  submit(std::move(job), std::move(what), [p](std::uint64_t bytes, std::exception_ptr e) {
    if (e) p->set_exception(e);
    else p->set_value(bytes);
  });
  return fut;
}

void prefetcher::submit(const file_entry& f, std::span<std::byte> dst, read_callback done) {
  auto& r = reader();
  submit([&r, &f, dst] { return r.read(f, dst); }, f.name, std::move(done));
}

std::future<std::uint64_t> prefetcher::submit(const file_entry& f, std::span<std::byte> dst) {
  auto& r = reader();
  return submit([&r, &f, dst] { return r.read(f, dst); }, f.name);
}

std::future<std::uint64_t> prefetcher::submit_layer(std::int64_t layer, std::span<std::byte> dst) {
  return submit(reader().source().layer_file(layer), dst);
}

std::size_t prefetcher::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size() + in_flight_;
}

void prefetcher::drain() {
  std::unique_lock lock(mu_);
  cv_space_.wait(lock, [&] { return queue_.empty() && in_flight_ == 0; });
}

void prefetcher::shutdown() {
  std::deque<request> cancelled;
  {
    std::lock_guard lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
    cancelled.swap(queue_);
  }
  cv_work_.notify_all();
  cv_space_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& r : cancelled)
    r.done(0, std::make_exception_ptr(octo::error("prefetcher: read of " + r.what + " cancelled by shutdown")));
  cv_space_.notify_all();
}

void prefetcher::run() {
  for (;;) {
    request r;
    {
      std::unique_lock lock(mu_);
      cv_work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and nothing left (shutdown takes the queue)
      r = std::move(queue_.front());
      queue_.pop_front();
      ++in_flight_;
    }
    std::uint64_t bytes = 0;
    std::exception_ptr error;
    try {
      bytes = r.read();
    } catch (...) {
      error = std::current_exception();
    }
    r.done(bytes, error);
    {
      std::lock_guard lock(mu_);
      --in_flight_;
    }
    cv_space_.notify_all();
  }
}

}  // namespace octo::stream
