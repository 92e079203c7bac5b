// prefetcher: one thread draining a bounded FIFO of reads; completion through promises or callbacks, so a
// read error reaches whoever waits on that read instead of stopping the thread.
#include "octo/stream/prefetcher.hpp"

#include <memory>

#include "octo/error.hpp"

namespace octo::stream {

prefetcher::prefetcher(const manifest& m, reader_options o, std::size_t depth)
    : reader_(m, o), depth_(depth == 0 ? 1 : depth) {
  thread_ = std::thread([this] { run(); });
}

prefetcher::~prefetcher() { shutdown(); }

void prefetcher::submit(const file_entry& f, std::span<std::byte> dst, read_callback done) {
  std::unique_lock lock(mu_);
  cv_space_.wait(lock, [&] { return stop_ || queue_.size() + in_flight_ < depth_; });
  if (stop_) throw octo::error("prefetcher: read of " + f.name + " submitted after shutdown");
  queue_.push_back({&f, dst, std::move(done)});
  lock.unlock();
  cv_work_.notify_one();
}

std::future<std::uint64_t> prefetcher::submit(const file_entry& f, std::span<std::byte> dst) {
  auto p = std::make_shared<std::promise<std::uint64_t>>();
  auto fut = p->get_future();
  submit(f, dst, [p](std::uint64_t bytes, std::exception_ptr e) {
    if (e) p->set_exception(e);
    else p->set_value(bytes);
  });
  return fut;
}

std::future<std::uint64_t> prefetcher::submit_layer(std::int64_t layer, std::span<std::byte> dst) {
  return submit(reader_.source().layer_file(layer), dst);
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
    r.done(0, std::make_exception_ptr(octo::error("prefetcher: read of " + r.file->name + " cancelled by shutdown")));
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
      bytes = reader_.read(*r.file, r.dst);
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
