// libFuzzer target for the tokenizers. The first byte picks what the rest is:
//   0: a tokenizer.json (loaded, then encoding and decoding a fixed text with it)
//   1: text encoded (special tokens parsed) and decoded by Qwen2's byte-level BPE (tiny-qwen's)
//   2: text for stories260K's SentencePiece tokenizer
//   3: token ids (int32, any value) decoded by both, and streamed piece by piece
// Loading must succeed or give octo::error; encoding valid or invalid UTF-8 and decoding any id must
// never crash; decode(encode(text)) must give the text back for the BPE tokenizer.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "octo/error.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/tokenizer.hpp"
#include "octo/model_file/vocabulary.hpp"

namespace {

using namespace octo::model_file;

const tokenizer& bpe() {
  static const tokenizer t(load_tokenizer_json(OCTO_FUZZ_SOURCE_DIR "/models/tiny-qwen/tokenizer.json"));
  return t;
}
const tokenizer& spm() {
  static const tokenizer t(
      load_gguf_vocabulary(gguf_file::open(OCTO_FUZZ_SOURCE_DIR "/../shared/data/stories260K/stories260K.gguf")));
  return t;
}

std::uint64_t exercise(const tokenizer& t, std::string_view text) {
  const auto ids = t.encode(text, true, true);
  const auto plain = t.encode(text, false, false);
  std::uint64_t sink = ids.size() + t.decode(ids).size();
  // Byte-level BPE is lossless on any bytes when special tokens are not parsed.
  if (&t == &bpe() && t.decode(plain, true) != text) __builtin_trap();
  return sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::uint64_t sink = 0;
  try {
    switch (data[0] % 4) {
      case 0: {
        const tokenizer t(load_tokenizer_json(octo::fuzz::put("tokenizer.json", rest)));
        sink += exercise(t, "Hello world, 123 <|im_start|> \xe2\x96\x81x");
        break;
      }
      case 1: sink += exercise(bpe(), rest); break;
      case 2: sink += exercise(spm(), rest); break;
      case 3: {
        std::vector<std::int32_t> ids(rest.size() / 4);
        if (!ids.empty()) std::memcpy(ids.data(), rest.data(), ids.size() * 4);  // an empty vector's data() may be null
        for (const tokenizer* t : {&bpe(), &spm()}) {
          try {
            sink += t->decode(ids).size();
          } catch (const octo::error&) {
          }
          for (auto id : ids)
            if (id >= 0 && id < t->size()) sink += t->token_to_piece(id).size() + (t->is_control(id) ? 1 : 0);
        }
        break;
      }
    }
  } catch (const octo::error&) {
  }
  if (sink == 0xdeadbeef) __builtin_trap();
  return 0;
}
