// ChatML, as Qwen2's chat template renders it, Llama 3's headers and DeepSeek-R1's markers, written out
// directly.
#include <algorithm>

#include "octo/error.hpp"
#include "octo/model_file/chat_template.hpp"
#include "octo/model_file/vocabulary.hpp"

namespace octo::model_file {

namespace {
void check_role(const chat_message& m) {
  if (m.role.empty()) throw error("chat: a message has an empty role");
  if (m.role.find_first_of("\n<|>") != std::string::npos)
    throw error("chat: role '" + m.role + "' contains a newline or markup character");
}
}  // namespace

std::string apply_chatml(const std::vector<chat_message>& messages, bool add_generation_prompt,
                         std::optional<std::string_view> default_system) {
  std::string out;
  auto turn = [&](std::string_view role, std::string_view content) {
    out += "<|im_start|>";
    out += role;
    out += '\n';
    out += content;
    out += "<|im_end|>\n";
  };
  if (default_system && (messages.empty() || messages.front().role != "system")) turn("system", *default_system);
  for (const auto& m : messages) {
    check_role(m);
    turn(m.role, m.content);
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string apply_llama3(const std::vector<chat_message>& messages, bool add_generation_prompt) {
  std::string out;
  const auto header = [&](std::string_view role) {
    out += "<|start_header_id|>";
    out += role;
    out += "<|end_header_id|>\n\n";
  };
  for (const auto& m : messages) {
    check_role(m);
    header(m.role);
    out += m.content;
    out += "<|eot_id|>";
  }
  if (add_generation_prompt) header("assistant");
  return out;
}

namespace {
// DeepSeek-R1's markers: the bars are U+FF5C (fullwidth), the space in end-of-sentence U+2581.
constexpr std::string_view ds_user = "<\xEF\xBD\x9CUser\xEF\xBD\x9C>";
constexpr std::string_view ds_assistant = "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>";
constexpr std::string_view ds_end = "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
}  // namespace

std::string apply_deepseek_r1(const std::vector<chat_message>& messages, bool add_generation_prompt, bool think) {
  std::string out;
  for (const auto& m : messages) {
    check_role(m);
    if (m.role != "system" && m.role != "user" && m.role != "assistant")
      throw error("chat: role '" + m.role + "' is not one DeepSeek-R1's format writes (system, user, assistant)");
  }
  // The template keeps the last system message's text and writes it before every turn.
  for (const auto& m : messages)
    if (m.role == "system") out = m.content;
  for (const auto& m : messages) {
    if (m.role == "user") {
      out += ds_user;
      out += m.content;
    } else if (m.role == "assistant") {
      const auto think_end = m.content.rfind("</think>");
      out += ds_assistant;
      out += think_end == std::string::npos ? std::string_view(m.content)
                                            : std::string_view(m.content).substr(think_end + 8);
      out += ds_end;
    }
  }
  if (add_generation_prompt) {
    out += ds_assistant;
    if (think) out += "<think>\n";
  }
  return out;
}

std::optional<chat_format> chat_format_of(const vocabulary& v) {
  if (!v.chat_template.empty()) {
    const auto uses = [&](std::string_view t) { return v.chat_template.find(t) != std::string::npos; };
    if (uses("<|start_header_id|>")) return chat_format::llama3;
    if (uses(ds_user) && uses(ds_assistant)) return chat_format::deepseek_r1;
    if (uses("<|im_start|>")) return chat_format::chatml;
    return std::nullopt;
  }
  const auto has = [&](std::string_view t) { return std::find(v.tokens.begin(), v.tokens.end(), t) != v.tokens.end(); };
  if (has("<|start_header_id|>") && has("<|eot_id|>")) return chat_format::llama3;
  if (has(ds_user) && has(ds_assistant)) return chat_format::deepseek_r1;
  if (has("<|im_start|>") && has("<|im_end|>")) return chat_format::chatml;
  return std::nullopt;
}

std::optional<std::string> chatml_default_system_of(std::string_view t) {
  // Qwen2.5's form: a literal system turn (the text holds no quote, brace or markup).
  for (std::string_view open : {std::string_view("<|im_start|>system\\n"), std::string_view("<|im_start|>system\n")})
    for (std::size_t at = t.find(open); at != std::string_view::npos; at = t.find(open, at + 1)) {
      const std::size_t from = at + open.size(), end = t.find("<|im_end|>", from);
      if (end == std::string_view::npos) break;
      const std::string_view text = t.substr(from, end - from);
      if (!text.empty() && text.find_first_of("'\"{}<>|") == std::string_view::npos) return std::string(text);
    }
  // Qwen2's form: {% set system_message = '...' %}.
  constexpr std::string_view set = "system_message = '";
  if (const std::size_t at = t.find(set); at != std::string_view::npos) {
    const std::size_t from = at + set.size(), end = t.find('\'', from);
    if (end != std::string_view::npos && end > from) return std::string(t.substr(from, end - from));
  }
  return std::nullopt;
}

std::string apply_chat(const vocabulary& v, const std::vector<chat_message>& messages, bool add_generation_prompt) {
  const auto f = chat_format_of(v);
  if (!f)
    throw error(std::string("chat: the model's chat template is none of ") + chat_formats_written +
                ", the formats octo writes");
  if (*f == chat_format::llama3) return apply_llama3(messages, add_generation_prompt);
  if (*f == chat_format::deepseek_r1) {
    // The newer revision's generation prompt opens the reasoning: '<｜Assistant｜><think>\n' (Jinja's \n is a
    // backslash and an n in the template's text).
    const std::string open = std::string(ds_assistant) + "<think>";
    const bool think = v.chat_template.find(open + "\\n") != std::string::npos ||
                       v.chat_template.find(open + "\n") != std::string::npos;
    return apply_deepseek_r1(messages, add_generation_prompt, think);
  }
  if (v.chat_template.empty()) return apply_chatml(messages, add_generation_prompt);
  const auto system = chatml_default_system_of(v.chat_template);
  return apply_chatml(messages, add_generation_prompt,
                      system ? std::optional<std::string_view>(*system) : std::nullopt);
}

}  // namespace octo::model_file
