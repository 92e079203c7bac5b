// Hugging Face tokenizer.json → vocabulary: the BPE model's vocab and merges, added tokens, and the
// pre-tokenizer / normalizer / post-processor settings octo's tokenizer needs.
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "octo/error.hpp"
#include "octo/file_io.hpp"
#include "octo/model_file/vocabulary.hpp"

namespace octo::model_file {
namespace {

using json = nlohmann::json;

constexpr std::int64_t max_token_id = 16 * 1024 * 1024;

// The Split regexes of the pre-tokenizers octo implements, exactly as tokenizer.json files write them.
constexpr const char* qwen2_regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* llama_bpe_regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Every object of `j` (itself, or the items of a Sequence's list under `list_key`).
std::vector<const json*> parts(const json& j, const char* list_key) {
  std::vector<const json*> out;
  if (!j.is_object()) return out;
  if (j.value("type", "") == "Sequence" && j.contains(list_key) && j[list_key].is_array()) {
    for (const auto& p : j[list_key])
      if (p.is_object()) out.push_back(&p);
  } else {
    out.push_back(&j);
  }
  return out;
}

bool has_type(const json& j, const char* list_key, std::string_view type) {
  for (const json* p : parts(j, list_key))
    if (p->value("type", "") == type) return true;
  return false;
}

vocabulary load(const std::filesystem::path& path) {
  const std::string where = "tokenizer '" + path.string() + "': ";
  const std::string text = read_file_text(path, std::uint64_t(1) << 30);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw error(where + "not valid JSON: " + octo::library_text(e.what()));
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) throw error(where + "no \"model\" object");
  const json& m = j["model"];
  const std::string type = m.value("type", "BPE");
  if (type != "BPE") throw error(where + "model type '" + type + "' is not supported (only BPE)");
  if (!m.contains("vocab") || !m["vocab"].is_object()) throw error(where + "model.vocab is not an object");

  const json null_json;
  const json& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : null_json;
  const json& norm = j.contains("normalizer") ? j["normalizer"] : null_json;
  const json& dec = j.contains("decoder") ? j["decoder"] : null_json;
  const bool byte_level = has_type(pre, "pretokenizers", "ByteLevel") || has_type(dec, "decoders", "ByteLevel");
  const bool byte_fallback = (m.contains("byte_fallback") && m["byte_fallback"].is_boolean() && m["byte_fallback"].get<bool>()) ||
                             has_type(dec, "decoders", "ByteFallback");
  vocabulary v;
  if (byte_level) v.kind = vocabulary::model::gpt2_bpe;
  else if (byte_fallback || has_type(pre, "pretokenizers", "Metaspace")) v.kind = vocabulary::model::llama_spm;
  else throw error(where + "a BPE tokenizer that is neither byte-level nor SentencePiece-style (byte fallback / Metaspace)");
  const bool spm = v.kind == vocabulary::model::llama_spm;

  std::map<std::int64_t, std::pair<std::string, std::int32_t>> by_id;
  auto add = [&](std::int64_t id, const std::string& text, std::int32_t t) {
    if (id < 0 || id >= max_token_id) throw error(where + "token id " + std::to_string(id) + " out of range");
    auto [it, fresh] = by_id.try_emplace(id, text, t);
    if (!fresh && it->second.first != text)
      throw error(where + "token id " + std::to_string(id) + " is both '" + it->second.first + "' and '" + text + "'");
    if (!fresh) it->second.second = t;
  };
  for (const auto& [text, id] : m["vocab"].items()) {
    if (!id.is_number_integer()) throw error(where + "the id of '" + text + "' is not an integer");
    std::int32_t t = token_type::normal;
    if (spm && text.size() == 6 && text.starts_with("<0x") && text.back() == '>') t = token_type::byte;
    add(id.get<std::int64_t>(), text, t);
  }
  if (m.contains("unk_token") && m["unk_token"].is_string()) {
    const auto unk = m["unk_token"].get<std::string>();
    if (m["vocab"].contains(unk)) by_id[m["vocab"][unk].get<std::int64_t>()].second = token_type::unknown;
  }
  if (j.contains("added_tokens")) {
    if (!j["added_tokens"].is_array()) throw error(where + "added_tokens is not an array");
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        throw error(where + "an added_tokens entry lacks an integer id or a string content");
      const bool special = a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>();
      const auto id = a["id"].get<std::int64_t>();
      const auto content = a["content"].get<std::string>();
      // The unknown token keeps its type even though it is listed as special.
      auto it = by_id.find(id);
      const bool unk = it != by_id.end() && it->second.second == token_type::unknown;
      add(id, content, unk ? token_type::unknown : special ? token_type::control : token_type::user_defined);
    }
  }
  if (by_id.empty()) throw error(where + "the vocabulary is empty");
  const auto n = std::size_t(by_id.rbegin()->first + 1);
  v.tokens.resize(n);
  v.token_types.assign(n, token_type::unused);
  for (std::size_t i = 0; i < n; ++i) v.tokens[i] = "[PAD" + std::to_string(i) + "]";
  std::map<std::string, std::int32_t, std::less<>> id_of;
  for (auto& [id, entry] : by_id) {
    v.tokens[std::size_t(id)] = entry.first;
    v.token_types[std::size_t(id)] = entry.second;
    id_of.emplace(entry.first, std::int32_t(id));
  }

  // Merges: "a b" strings or [a, b] pairs, highest priority first.
  std::vector<std::pair<std::string, std::string>> merges;
  if (m.contains("merges")) {
    if (!m["merges"].is_array()) throw error(where + "model.merges is not an array");
    for (const auto& e : m["merges"]) {
      if (e.is_string()) {
        const auto str = e.get<std::string>();
        const auto sp = str.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == str.size() || str.find(' ', sp + 1) != std::string::npos)
          throw error(where + "merge '" + str + "' is not two tokens separated by one space");
        merges.emplace_back(str.substr(0, sp), str.substr(sp + 1));
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      } else {
        throw error(where + "a merge is neither \"a b\" nor [a, b]");
      }
    }
  }

  if (spm) {
    // SentencePiece-style: the tokenizer merges the best-scoring pair, so a token made by an earlier
    // merge must score higher. Tokens no merge makes (characters, bytes, specials) score far below.
    v.scores.assign(n, -1e9f);
    for (std::size_t r = merges.size(); r-- > 0;) {
      auto it = id_of.find(merges[r].first + merges[r].second);
      if (it != id_of.end()) v.scores[std::size_t(it->second)] = -float(r);
    }
    v.pre.clear();
    v.add_space_prefix = false;
    for (const json* p : parts(norm, "normalizers"))
      if (p->value("type", "") == "Prepend" && p->value("prepend", "") == "\xE2\x96\x81") v.add_space_prefix = true;
    for (const json* p : parts(pre, "pretokenizers"))
      if (p->value("type", "") == "Metaspace" && p->value("prepend_scheme", "always") != "never") v.add_space_prefix = true;
  } else {
    for (auto& [a, b] : merges) {
      if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos)
        throw error(where + "merge part '" + (a.find(' ') != std::string::npos ? a : b) + "' contains a space");
      v.merges.push_back(a + " " + b);
    }
    v.pre = "default";
    bool digits = false, split = false;
    for (const json* p : parts(pre, "pretokenizers")) {
      const std::string type = p->value("type", "");
      if (type == "ByteLevel") continue;
      if (type == "Digits") {  // SmolLM's: every digit a piece of its own, then GPT-2's split
        if (!p->value("individual_digits", false))
          throw error(where + "unsupported pre-tokenizer Digits without individual_digits");
        digits = true;
        continue;
      }
      if (type != "Split") throw error(where + "unsupported pre-tokenizer '" + type + "'");
      split = true;
      std::string regex;
      if (p->contains("pattern") && (*p)["pattern"].is_object() && (*p)["pattern"].contains("Regex") &&
          (*p)["pattern"]["Regex"].is_string())
        regex = (*p)["pattern"]["Regex"].get<std::string>();
      if (regex == qwen2_regex) v.pre = "qwen2";
      else if (regex == llama_bpe_regex) v.pre = "llama-bpe";
      else throw error(where + "unsupported pre-tokenizer Split regex (octo knows the GPT-2, Qwen2 and llama-bpe ones)");
    }
    if (digits && split) throw error(where + "unsupported pre-tokenizer: Digits with a Split");
    if (digits) v.pre = "smollm";
  }

  // BOS from a TemplateProcessing post-processor that starts single sequences with a special token.
  if (j.contains("post_processor") && j["post_processor"].is_object()) {
    for (const json* p : parts(j["post_processor"], "processors")) {
      if (p->value("type", "") != "TemplateProcessing" || !p->contains("single") || !(*p)["single"].is_array() ||
          (*p)["single"].empty())
        continue;
      const json& first = (*p)["single"][0];
      if (first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].is_object() &&
          first["SpecialToken"].contains("id") && first["SpecialToken"]["id"].is_string()) {
        auto it = id_of.find(first["SpecialToken"]["id"].get<std::string>());
        if (it != id_of.end()) {
          v.bos = it->second;
          v.add_bos = true;
        }
      }
    }
  }
  return v;
}

}  // namespace

vocabulary load_tokenizer_json(const std::filesystem::path& path) {
  try {
    return load(path);
  } catch (const nlohmann::json::exception& e) {
    throw error("tokenizer '" + path.string() + "': unexpected JSON value: " + octo::library_text(e.what()));
  }
}

}  // namespace octo::model_file
