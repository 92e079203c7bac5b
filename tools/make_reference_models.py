#!/usr/bin/env python3
"""Random-weight Qwen2ForCausalLM, Qwen3ForCausalLM and LlamaForCausalLM (with Llama 3.1's "llama3" RoPE
scaling) reference models for octo's converter and runtime tests (issue 5, item 6b), with transformers'
outputs as the oracle.

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
    theta = 10000.0 if kind in ("qwen2", "llama3") else 1000000.0
    rope = {"rope_type": "default"}
    if kind == "qwen2":
        cls, extra = transformers.Qwen2Config, dict(tie_word_embeddings=True)
    elif kind == "qwen3":  # head_dim 32 != 64 / 4, untied output head
        cls, extra = transformers.Qwen3Config, dict(tie_word_embeddings=False, head_dim=32, attention_bias=False)
    else:  # Llama 3.2's form: tied, no biases, the llama3 RoPE scaling. head_dim 16, so of the 8 frequencies
        # (wavelengths 6.3, 19.9, 62.8, 199, 628, ...) the first keeps its own, the next three lie on the
        # ramp between 256 / 16 and 256 / 1, and the rest are divided by 8.
        cls, extra = transformers.LlamaConfig, dict(tie_word_embeddings=True, attention_bias=False, mlp_bias=False)
        rope = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 16.0,
                "original_max_position_embeddings": 256}
    try:
        return cls(**common, **extra, rope_parameters={**rope, "rope_theta": theta})
    except TypeError:
        if kind == "llama3":
            return cls(**common, **extra, rope_theta=theta, rope_scaling=rope)
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
    gen = torch.Generator().manual_seed(SEED + {"qwen2": 0, "qwen3": 1, "llama3": 2}[kind])
    config = make_config(kind)
    config._attn_implementation = "eager"
    cls = {"qwen2": transformers.Qwen2ForCausalLM, "qwen3": transformers.Qwen3ForCausalLM,
           "llama3": transformers.LlamaForCausalLM}[kind]
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
    if kind == "llama3":
        check_llama3_scaling(model)
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


def check_llama3_scaling(model):
    """The llama3 model's rotary frequencies differ from plain RoPE's, so its test checks the scaling."""
    emb = model.model.rotary_emb
    inv = emb.inv_freq.double()
    plain = 1.0 / (10000.0 ** (torch.arange(0, 16, 2, dtype=torch.float64) / 16))
    ratio = (inv / plain).tolist()
    print("llama3 inv_freq / plain:", [round(r, 6) for r in ratio])
    assert abs(ratio[0] - 1) < 1e-6 and abs(ratio[-1] - 0.125) < 1e-6 and 0.125 < ratio[2] < 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", default=os.path.join(os.path.dirname(__file__), "..", "models", "tiny-qwen",
                                                        "tokenizer.json"))
    ap.add_argument("--tinystories-tokenizer")
    ap.add_argument("--kinds", default="qwen2,qwen3,llama3", help="the models to make (default: all three)")
    a = ap.parse_args()
    torch.manual_seed(SEED)
    print("torch", torch.__version__, "transformers", transformers.__version__)
    kinds = a.kinds.split(",")
    for kind in kinds:
        build(kind, os.path.join(a.out, kind), a.tokenizer)
    if a.kinds != "qwen2,qwen3,llama3":
        return
    paths = {"tiny_qwen": a.tokenizer}
    if a.tinystories_tokenizer:
        paths["tinystories"] = a.tinystories_tokenizer
    tokenizer_ids(paths, os.path.join(a.out, "tokenizer_ids.json"))


if __name__ == "__main__":
    main()
