#!/usr/bin/env python3
"""Random-weight Qwen2ForCausalLM and Qwen3ForCausalLM reference models for octo's converter and runtime
tests (issue 5, item 6b), with transformers' outputs as the oracle.

For each model: model.safetensors (F32) + config.json, and reference.json holding three fixed prompts
(token ids), the last-position logits of each (computed in float64 from the F32 weights, stored as
float32 values) and 16-token greedy continuations; the same again with every 2-D weight rounded to F16
("f16", what an F16 GGUF holds: norms and biases stay F32). The vocabulary is tiny-qwen's 632-token
byte-level BPE (models/tiny-qwen/tokenizer.json), so the files stay small.

Also, when a tokenizer file is given with --tinystories-tokenizer, tokenizer_ids.json: Hugging Face
`tokenizers`' ids for a few strings under tiny-qwen's and that tokenizer (the converter test's oracle).

Run (CPU is enough; no internet needed):
    python3 tools/make_reference_models.py --out OUTDIR [--tinystories-tokenizer tokenizer.json]
"""
import argparse
import json
import os
import shutil

import torch
import transformers

SEED = 20261121
PROMPTS = [[3, 70, 81, 100, 200, 5], [1, 400, 17, 17, 250, 631, 42, 9, 300, 120, 77], [500]]
N_GREEDY = 16
TOKENIZER_STRINGS = [
    "Once upon a time, there was a little cat.",
    "317+48=365",
    "  two  spaces\tand a tab\nnew line",
    "Tom said: \"I'm happy!\" 12345",
    "<|im_start|>user\nHi<|im_end|>",
]


def make_config(kind):
    common = dict(vocab_size=632, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
                  bos_token_id=0, eos_token_id=0, initializer_range=0.1)
    theta = 10000.0 if kind == "qwen2" else 1000000.0
    if kind == "qwen2":
        cls, extra = transformers.Qwen2Config, dict(tie_word_embeddings=True)
    else:  # head_dim 32 != 64 / 4, untied output head
        cls, extra = transformers.Qwen3Config, dict(tie_word_embeddings=False, head_dim=32, attention_bias=False)
    try:
        return cls(**common, **extra, rope_parameters={"rope_type": "default", "rope_theta": theta})
    except TypeError:
        return cls(**common, **extra, rope_theta=theta)


def randomize(model, gen):
    # Norm weights and biases away from their 1 / 0 defaults, so that a converter that drops or swaps
    # them is caught; matrices with std 0.1 so that logits have clear winners.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))


def reference(model):
    out = {"logits": [], "greedy": [], "min_margin": []}
    with torch.no_grad():
        for prompt in PROMPTS:
            ids = list(prompt)
            logits = model(torch.tensor([ids])).logits[0, -1]
            out["logits"].append([float(torch.tensor(x, dtype=torch.float32)) for x in logits.tolist()])
            margin = float("inf")
            gen = []
            for _ in range(N_GREEDY):
                last = model(torch.tensor([ids])).logits[0, -1]
                top = torch.topk(last, 2).values
                margin = min(margin, float(top[0] - top[1]))
                nxt = int(torch.argmax(last))
                gen.append(nxt)
                ids.append(nxt)
            out["greedy"].append(gen)
            out["min_margin"].append(margin)
    return out


def build(kind, out_dir, tokenizer_json):
    gen = torch.Generator().manual_seed(SEED + (0 if kind == "qwen2" else 1))
    config = make_config(kind)
    config._attn_implementation = "eager"
    cls = transformers.Qwen2ForCausalLM if kind == "qwen2" else transformers.Qwen3ForCausalLM
    model = cls(config).float().eval()
    randomize(model, gen)
    if config.tie_word_embeddings:
        model.tie_weights()
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    gc = os.path.join(out_dir, "generation_config.json")
    if os.path.exists(gc):
        os.remove(gc)
    shutil.copy(tokenizer_json, os.path.join(out_dir, "tokenizer.json"))

    ref = {"generator": "tools/make_reference_models.py", "seed": SEED, "torch": torch.__version__,
           "transformers": transformers.__version__, "prompts": PROMPTS,
           "note": "logits: last prompt position, float64 forward pass; f16: 2-D weights rounded to F16"}
    m64 = model.double()
    ref["f32"] = reference(m64)
    with torch.no_grad():
        for p in m64.parameters():
            if p.dim() == 2:
                p.copy_(p.float().half().double())
    ref["f16"] = reference(m64)
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump(ref, f)
    print(kind, "params", sum(p.numel() for p in model.parameters()), "min margins f32", ref["f32"]["min_margin"],
          "f16", ref["f16"]["min_margin"], "greedy f32", ref["f32"]["greedy"], "greedy f16", ref["f16"]["greedy"])


def tokenizer_ids(paths, out_file):
    import tokenizers
    out = {"tokenizers": tokenizers.__version__, "strings": TOKENIZER_STRINGS}
    for key, path in paths.items():
        tok = tokenizers.Tokenizer.from_file(path)
        out[key] = [tok.encode(s, add_special_tokens=False).ids for s in TOKENIZER_STRINGS]
    with open(out_file, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", default=os.path.join(os.path.dirname(__file__), "..", "models", "tiny-qwen",
                                                        "tokenizer.json"))
    ap.add_argument("--tinystories-tokenizer")
    a = ap.parse_args()
    torch.manual_seed(SEED)
    print("torch", torch.__version__, "transformers", transformers.__version__)
    for kind in ("qwen2", "qwen3"):
        build(kind, os.path.join(a.out, kind), a.tokenizer)
    paths = {"tiny_qwen": a.tokenizer}
    if a.tinystories_tokenizer:
        paths["tinystories"] = a.tinystories_tokenizer
    tokenizer_ids(paths, os.path.join(a.out, "tokenizer_ids.json"))


if __name__ == "__main__":
    main()
