// chat_template: the ChatML conversation format of instruct models (Qwen2 / Qwen2.5), built directly
// instead of interpreting the Jinja template shipped in tokenizer_config.json.
#pragma once

#include <string>
#include <vector>

namespace octo::model_file {

struct chat_message {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// Qwen2's default system prompt, used when the conversation does not start with a system message.
inline constexpr const char* chatml_default_system = "You are a helpful assistant.";

// "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message, Qwen2's default system message first when the
// conversation has none, then "<|im_start|>assistant\n" if add_generation_prompt. An empty role throws
// octo::error.
std::string apply_chatml(const std::vector<chat_message>& messages, bool add_generation_prompt = true);

}  // namespace octo::model_file
