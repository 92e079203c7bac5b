// Sanitizer builds only, linked into every test binary: LeakSanitizer reads tests/sanitizers/lsan.supp
// (the Vulkan driver stack's own leaks, by module), and every Vulkan driver (and, under OCTO_VALIDATION,
// the validation layer) stays loaded until the process exits so that the report at exit can name their
// frames. Without this the loader unloads the driver at vkDestroyInstance and the report shows
// "<unknown module>", which no suppression matches.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_paths(const char* list) {
  std::vector<std::string> out;
  if (!list) return out;
  std::string_view s(list);
  while (!s.empty()) {
    const auto colon = s.find(':');
    if (colon != 0) out.emplace_back(s.substr(0, colon));
    if (colon == std::string_view::npos) break;
    s.remove_prefix(colon + 1);
  }
  return out;
}

// The manifests the loader would read: the files an override variable names, else every *.json in the
// standard folders of `kind` ("icd.d", "implicit_layer.d", "explicit_layer.d").
std::vector<fs::path> manifests(const char* kind, std::initializer_list<const char*> overrides) {
  std::vector<fs::path> out;
  for (const char* var : overrides)
    for (const auto& p : split_paths(std::getenv(var))) out.emplace_back(p);
  if (!out.empty()) return out;
  std::vector<std::string> roots = {"/etc/vulkan", "/usr/local/share/vulkan", "/usr/share/vulkan"};
  for (const auto& d : split_paths(std::getenv("XDG_DATA_DIRS"))) roots.push_back(d + "/vulkan");
  for (const auto& root : roots) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(root) / kind, ec))
      if (e.path().extension() == ".json") out.push_back(e.path());
  }
  return out;
}

// `only_layer`: pin a layer manifest only if it describes this layer (empty: any).
void pin(const fs::path& manifest, std::string_view only_layer = {}) {
  std::ifstream in(manifest);
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  const auto* section = j.contains("ICD") ? &j["ICD"] : j.contains("layer") ? &j["layer"] : nullptr;
  if (!section || !section->is_object() || !section->contains("library_path")) return;
  if (!only_layer.empty() && !(section->contains("name") && (*section)["name"] == only_layer)) return;
  const auto& lib = (*section)["library_path"];
  if (!lib.is_string()) return;
  std::string path = lib.get<std::string>();
  // A relative path with a slash is relative to the manifest; a bare name goes through the search path.
  if (path.find('/') != std::string::npos && fs::path(path).is_relative())
    path = (manifest.parent_path() / path).string();
  // RTLD_NODELETE: the loader's later dlclose leaves the module mapped until exit. A driver that does not
  // load here is left alone (the test then reports what it reports).
  dlopen(path.c_str(), RTLD_NOW | RTLD_NODELETE);
}

[[gnu::constructor]] void keep_vulkan_modules_loaded() {
  // The loader itself: octo opens it at run time and closes it with the last instance.
  dlopen("libvulkan.so.1", RTLD_NOW | RTLD_NODELETE);
  for (const auto& m : manifests("icd.d", {"VK_DRIVER_FILES", "VK_ICD_FILENAMES"})) pin(m);
  // Implicit layers (Mesa's device-select layer) load with every instance.
  for (const auto& m : manifests("implicit_layer.d", {})) pin(m);
  const char* validation = std::getenv("OCTO_VALIDATION");
  if (validation && std::string_view(validation) == "1")
    for (const auto& m : manifests("explicit_layer.d", {})) pin(m, "VK_LAYER_KHRONOS_validation");
}

}  // namespace

// Read by LeakSanitizer before LSAN_OPTIONS, which can still override or add to it.
extern "C" const char* __lsan_default_options() {
  return "suppressions=" OCTO_LSAN_SUPPRESSIONS ":print_suppressions=0";
}
