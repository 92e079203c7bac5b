// temp_dir: a fresh directory under the system temp folder for one test, removed with everything in it
// when the test ends (tests that write files must not collide with each other or with earlier runs).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace octo::test {

class temp_dir {
 public:
  explicit temp_dir(std::string_view tag) {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("octo-" + std::string(tag) + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// The temporary siblings octo::output_file leaves beside `path` while writing it (PATH.tmp-*).
inline std::vector<std::filesystem::path> temporaries_of(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> out;
  const std::string prefix = path.filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(path.parent_path(), ec))
    if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path());
  return out;
}

}  // namespace octo::test
