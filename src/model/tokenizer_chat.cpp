// ChatML, as Qwen2's chat template renders it, written out directly.
#include "octo/error.hpp"
#include "octo/model_file/chat_template.hpp"

namespace octo::model_file {

std::string apply_chatml(const std::vector<chat_message>& messages, bool add_generation_prompt) {
  std::string out;
  auto turn = [&](std::string_view role, std::string_view content) {
    out += "<|im_start|>";
    out += role;
    out += '\n';
    out += content;
    out += "<|im_end|>\n";
  };
  if (messages.empty() || messages.front().role != "system") turn("system", chatml_default_system);
  for (const auto& m : messages) {
    if (m.role.empty()) throw error("chat: a message has an empty role");
    if (m.role.find_first_of("\n<|>") != std::string::npos)
      throw error("chat: role '" + m.role + "' contains a newline or markup character");
    turn(m.role, m.content);
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace octo::model_file
