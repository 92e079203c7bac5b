// chat_template: the conversation formats of instruct models, built directly instead of interpreting the
// Jinja template a model ships: ChatML (Qwen2, Qwen2.5, Qwen3, SmolLM2), Llama 3's headers (Llama 3,
// 3.1, 3.2) and DeepSeek-R1's (its distills of Qwen2.5 and Llama 3).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace octo::model_file {

struct chat_message {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// Qwen2's default system prompt, used when the conversation does not start with a system message.
inline constexpr const char* chatml_default_system = "You are a helpful assistant.";

// "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message, a system message of `default_system` first when
// the conversation has none (none with nullopt), then "<|im_start|>assistant\n" if
// add_generation_prompt. An empty role throws octo::error.
std::string apply_chatml(const std::vector<chat_message>& messages, bool add_generation_prompt = true,
                         std::optional<std::string_view> default_system = chatml_default_system);

// The system message a ChatML chat template adds where a conversation has none: the literal text between
// "<|im_start|>system\n" (a newline or Jinja's \n) and "<|im_end|>" (Qwen2.5's "You are Qwen, created
// by Alibaba Cloud. ..."), or a `system_message = '...'` default (Qwen2's); nullopt where the template
// writes no literal one (Qwen3's adds none).
std::optional<std::string> chatml_default_system_of(std::string_view chat_template);

// "<|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>" per message (no default system
// message), then "<|start_header_id|>assistant<|end_header_id|>\n\n" if add_generation_prompt. The
// <|begin_of_text|> before it is the tokenizer's BOS (encode with add_special). An empty role throws.
std::string apply_llama3(const std::vector<chat_message>& messages, bool add_generation_prompt = true);

// DeepSeek-R1's (its Qwen and Llama distills): the system messages' text first, then "<｜User｜>CONTENT" per
// user message and "<｜Assistant｜>CONTENT<｜end▁of▁sentence｜>" per assistant message (the part after a
// "</think>" only, as the template keeps), then "<｜Assistant｜>" if add_generation_prompt, followed by
// "<think>\n" where `think` (the template's newer revision opens the reasoning itself). The
// <｜begin▁of▁sentence｜> before it is the tokenizer's BOS. Roles other than system, user and assistant
// throw octo::error.
std::string apply_deepseek_r1(const std::vector<chat_message>& messages, bool add_generation_prompt = true,
                              bool think = false);

enum class chat_format { chatml, llama3, deepseek_r1 };
// The formats octo writes, with the marker that identifies each (error messages name them).
inline constexpr const char* chat_formats_written =
    "ChatML (<|im_start|>), Llama 3's (<|start_header_id|>) and DeepSeek-R1's (<\xEF\xBD\x9CUser\xEF\xBD\x9C>)";

struct vocabulary;
// The format a model's chat template (tokenizer.chat_template) writes: Llama 3's where it uses
// <|start_header_id|>, DeepSeek-R1's where it uses <｜User｜> and <｜Assistant｜>, ChatML where it uses
// <|im_start|>; without a template, the one whose markers the vocabulary holds as tokens. nullopt: none
// of these (octo renders no other format).
std::optional<chat_format> chat_format_of(const vocabulary& v);

// The messages as the model's own template writes them: its format (chat_format_of) and, for ChatML, the
// default system message its template has (chatml_default_system_of; Qwen2's where the model has no
// template). Throws octo::error where the model's format is neither.
std::string apply_chat(const vocabulary& v, const std::vector<chat_message>& messages, bool add_generation_prompt = true);

}  // namespace octo::model_file
