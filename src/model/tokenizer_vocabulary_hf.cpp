// Hugging Face tokenizer folders → vocabulary: vocab.json + merges.txt, with added tokens and special
// token names from added_tokens.json, tokenizer_config.json and special_tokens_map.json.
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "octo/error.hpp"
#include "octo/file_io.hpp"
#include "octo/model_file/vocabulary.hpp"

namespace octo::model_file {
namespace {

using json = nlohmann::json;

// Vocabularies have at most a few hundred thousand tokens; a larger id is a corrupt file, and
// rejecting it keeps a bad id from allocating gigabytes.
constexpr int64_t max_token_id = 16 * 1024 * 1024;

std::string read_file(const std::filesystem::path& path) {
  return read_file_text(path, std::uint64_t(1) << 30);
}

json read_json(const std::filesystem::path& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw error("tokenizer: '" + path.string() + "' is not valid JSON: " + octo::library_text(e.what()));
  }
}

// A special token named in tokenizer_config.json / special_tokens_map.json: a string, an object with
// "content", or null.
std::string token_name(const json& j, const std::filesystem::path& path, const char* key) {
  if (j.is_null()) return {};
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string())
    return j["content"].get<std::string>();
  throw error("tokenizer: '" + path.string() + "': \"" + key + "\" is neither a string nor {content}");
}

vocabulary load_hf_vocabulary_unchecked(const std::filesystem::path& folder) {
  vocabulary v;
  v.kind = vocabulary::model::gpt2_bpe;

  // id → (text, type); std::map keeps it ordered and shows duplicates.
  std::map<int64_t, std::pair<std::string, int32_t>> by_id;
  auto add = [&](int64_t id, std::string text, int32_t type, const std::filesystem::path& from) {
    if (id < 0 || id >= max_token_id)
      throw error("tokenizer: '" + from.string() + "': token id " + std::to_string(id) + " out of range");
    auto [it, fresh] = by_id.try_emplace(id, text, type);
    if (!fresh && it->second.first != text)
      throw error("tokenizer: '" + from.string() + "': token id " + std::to_string(id) +
                  " is both '" + it->second.first + "' and '" + text + "'");
    if (!fresh) it->second.second = type;  // an added token may re-declare a vocab entry as special
  };

  const auto vocab_path = folder / "vocab.json";
  const json vocab = read_json(vocab_path);
  if (!vocab.is_object()) throw error("tokenizer: '" + vocab_path.string() + "' is not a JSON object");
  for (const auto& [text, id] : vocab.items()) {
    if (!id.is_number_integer())
      throw error("tokenizer: '" + vocab_path.string() + "': the id of '" + text + "' is not an integer");
    add(id.get<int64_t>(), text, token_type::normal, vocab_path);
  }

  const auto merges_path = folder / "merges.txt";
  {
    std::istringstream in(read_file(merges_path));
    std::string line;
    size_t line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
      const auto space = line.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
          line.find(' ', space + 1) != std::string::npos)
        throw error("tokenizer: '" + merges_path.string() + "' line " + std::to_string(line_no) +
                    ": expected two tokens separated by one space");
      v.merges.push_back(std::move(line));
    }
  }

  // Added tokens: added_tokens.json has text → id; tokenizer_config.json's added_tokens_decoder has
  // id → {content, special}. Special ones are control tokens, the others user-defined.
  const auto added_path = folder / "added_tokens.json";
  if (std::filesystem::exists(added_path)) {
    const json added = read_json(added_path);
    if (!added.is_object()) throw error("tokenizer: '" + added_path.string() + "' is not a JSON object");
    for (const auto& [text, id] : added.items()) {
      if (!id.is_number_integer())
        throw error("tokenizer: '" + added_path.string() + "': the id of '" + text + "' is not an integer");
      add(id.get<int64_t>(), text, token_type::control, added_path);
    }
  }

  const auto config_path = folder / "tokenizer_config.json";
  json config = json::object();
  if (std::filesystem::exists(config_path)) {
    config = read_json(config_path);
    if (!config.is_object()) throw error("tokenizer: '" + config_path.string() + "' is not a JSON object");
  }
  if (config.contains("added_tokens_decoder")) {
    const json& dec = config["added_tokens_decoder"];
    if (!dec.is_object())
      throw error("tokenizer: '" + config_path.string() + "': added_tokens_decoder is not an object");
    for (const auto& [key, entry] : dec.items()) {
      int64_t id = -1;
      try {
        size_t used = 0;
        id = std::stoll(key, &used);
        if (used != key.size()) id = -1;
      } catch (const std::exception&) {
        id = -1;
      }
      if (id < 0 || !entry.is_object() || !entry.contains("content") || !entry["content"].is_string())
        throw error("tokenizer: '" + config_path.string() + "': bad added_tokens_decoder entry '" + key + "'");
      const bool special = entry.value("special", false);
      add(id, entry["content"].get<std::string>(), special ? token_type::control : token_type::user_defined,
          config_path);
    }
  }

  if (by_id.empty()) throw error("tokenizer: '" + vocab_path.string() + "' has no tokens");
  const auto n = size_t(by_id.rbegin()->first + 1);
  v.tokens.resize(n);
  v.token_types.assign(n, token_type::unused);
  for (size_t i = 0; i < n; ++i) v.tokens[i] = "[PAD" + std::to_string(i) + "]";
  for (auto& [id, entry] : by_id) {
    v.tokens[size_t(id)] = std::move(entry.first);
    v.token_types[size_t(id)] = entry.second;
  }

  // Special token names: tokenizer_config.json first, special_tokens_map.json fills the gaps.
  json names = json::object();
  const auto map_path = folder / "special_tokens_map.json";
  if (std::filesystem::exists(map_path)) {
    names = read_json(map_path);
    if (!names.is_object()) throw error("tokenizer: '" + map_path.string() + "' is not a JSON object");
  }
  auto special_id = [&](const char* key) -> int32_t {
    std::string name;
    if (config.contains(key)) name = token_name(config[key], config_path, key);
    else if (names.contains(key)) name = token_name(names[key], map_path, key);
    if (name.empty()) return -1;
    for (size_t i = 0; i < v.tokens.size(); ++i)
      if (v.tokens[i] == name) return int32_t(i);
    throw error("tokenizer: " + std::string(key) + " '" + name + "' is not in the vocabulary");
  };
  v.bos = special_id("bos_token");
  v.eos = special_id("eos_token");
  v.pad = special_id("pad_token");
  if (config.contains("add_bos_token")) {
    if (!config["add_bos_token"].is_boolean())
      throw error("tokenizer: '" + config_path.string() + "': add_bos_token is not a boolean");
    v.add_bos = config["add_bos_token"].get<bool>();
  }
  if (config.contains("chat_template") && config["chat_template"].is_string())
    v.chat_template = config["chat_template"].get<std::string>();
  const bool qwen2 = config.contains("tokenizer_class") && config["tokenizer_class"].is_string() &&
                     config["tokenizer_class"].get<std::string>().starts_with("Qwen2Tokenizer");
  v.pre = qwen2 ? "qwen2" : "default";
  return v;
}

}  // namespace

vocabulary load_hf_vocabulary(const std::filesystem::path& folder) {
  try {
    return load_hf_vocabulary_unchecked(folder);
  } catch (const nlohmann::json::exception& e) {
    // A value of the wrong JSON type somewhere deep (e.g. "special": "yes").
    throw error("tokenizer: unexpected JSON value in '" + folder.string() + "': " + octo::library_text(e.what()));
  }
}

}  // namespace octo::model_file
