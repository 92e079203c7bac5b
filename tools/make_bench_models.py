#!/usr/bin/env python3
"""Random-weight Qwen2.5-shaped Hugging Face checkpoints for benchmarks (no internet needed).

Writes MODEL_DIR/{config.json, model.safetensors, tokenizer files}: config.json from transformers'
Qwen2Config when it can be imported (else the same keys by hand), weights N(0, 0.02) in float16 (norms
1, biases 0) generated on the GPU by torch when present, else by numpy, streamed tensor by tensor
into one safetensors file so a 7B model never sits whole in host memory.

  make_bench_models.py SHAPE OUT_DIR --tokenizer DIR     (SHAPE: 0.5b, 1.5b, 7b, tiny)
"""
import argparse
import json
import os
import shutil
import struct
import sys

# Published Qwen2.5 shapes: hidden, layers, heads, kv heads, ffn, vocab, tied embeddings.
SHAPES = {
    "0.5b": (896, 24, 14, 2, 4864, 151936, True),
    "1.5b": (1536, 28, 12, 2, 8960, 151936, True),
    "7b": (3584, 28, 28, 4, 18944, 152064, False),
    "tiny": (256, 2, 4, 2, 512, 151936, True),  # a smoke test on lavapipe (rows of 256: k-quants apply)
}
TOKENIZER_FILES = ["vocab.json", "merges.txt", "tokenizer_config.json", "added_tokens.json",
                   "special_tokens_map.json", "tokenizer.json", "LICENSE"]


def config_dict(shape):
    h, layers, heads, kv, ffn, vocab, tied = SHAPES[shape]
    keys = dict(hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                intermediate_size=ffn, vocab_size=vocab, tie_word_embeddings=tied, max_position_embeddings=32768,
                rope_theta=1000000.0, rms_norm_eps=1e-6, hidden_act="silu", bos_token_id=151643,
                eos_token_id=151643, use_sliding_window=False)
    try:
        from transformers import Qwen2Config
        cfg = Qwen2Config(**keys)
        d = cfg.to_dict()
        d.update(keys)  # transformers 5 may fold some keys (rope_theta) into others; keep them verbatim
        d["architectures"] = ["Qwen2ForCausalLM"]
        d["dtype"] = "float16"
        return d
    except Exception as e:  # transformers missing (the build machine): the same keys by hand
        print(f"make_bench_models: Qwen2Config unavailable ({type(e).__name__}); writing config.json by hand",
              file=sys.stderr)
        d = dict(keys)
        d.update(architectures=["Qwen2ForCausalLM"], model_type="qwen2", dtype="float16", attention_dropout=0.0,
                 initializer_range=0.02, sliding_window=None, max_window_layers=layers, use_cache=True)
        return d


def tensors(shape):
    """(name, shape, kind) in HF Qwen2 naming; kind: w (random), one (norm), zero (bias)."""
    h, layers, heads, kv, ffn, vocab, tied = SHAPES[shape]
    hd = h // heads
    out = [("model.embed_tokens.weight", (vocab, h), "w")]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (h,), "one"),
                (p + "self_attn.q_proj.weight", (heads * hd, h), "w"), (p + "self_attn.q_proj.bias", (heads * hd,), "zero"),
                (p + "self_attn.k_proj.weight", (kv * hd, h), "w"), (p + "self_attn.k_proj.bias", (kv * hd,), "zero"),
                (p + "self_attn.v_proj.weight", (kv * hd, h), "w"), (p + "self_attn.v_proj.bias", (kv * hd,), "zero"),
                (p + "self_attn.o_proj.weight", (h, heads * hd), "w"),
                (p + "post_attention_layernorm.weight", (h,), "one"),
                (p + "mlp.gate_proj.weight", (ffn, h), "w"), (p + "mlp.up_proj.weight", (ffn, h), "w"),
                (p + "mlp.down_proj.weight", (h, ffn), "w")]
    out.append(("model.norm.weight", (h,), "one"))
    if not tied:
        out.append(("lm_head.weight", (vocab, h), "w"))
    return out


class generator:
    def __init__(self, seed):
        try:
            import torch
            self.torch = torch
            self.dev = "cuda" if torch.cuda.is_available() else "cpu"
            self.gen = torch.Generator(device=self.dev)
            self.gen.manual_seed(seed)
        except ImportError:
            self.torch = None
            try:
                import numpy as np
                self.np = np
                self.rng = np.random.default_rng(seed)
            except ImportError:  # plain Python (slow): a 64 Ki-value random pattern, tiled
                import random
                r = random.Random(seed)
                self.np = None
                self.pattern = struct.pack("<65536e", *[r.gauss(0.0, 0.02) for _ in range(65536)])

    def make(self, shape, kind):
        """Little-endian float16 bytes."""
        if self.torch is not None:
            t = self.torch
            if kind == "w":
                x = t.randn(shape, generator=self.gen, device=self.dev, dtype=t.float16) * 0.02
            else:
                x = (t.ones if kind == "one" else t.zeros)(shape, device=self.dev, dtype=t.float16)
            return x.contiguous().view(t.uint8).cpu().numpy().tobytes()
        np = self.np
        if np is None:
            n = 1
            for d in shape:
                n *= d
            if kind != "w":
                return struct.pack("<e", 1.0 if kind == "one" else 0.0) * n
            reps = -(-2 * n // len(self.pattern))
            return (self.pattern * reps)[:2 * n]
        if kind == "w":
            x = (self.rng.standard_normal(shape, dtype=np.float32) * 0.02).astype("<f2")
        else:
            x = (np.ones if kind == "one" else np.zeros)(shape, dtype="<f2")
        return x.tobytes()


def write_safetensors(path, shape, seed):
    items = tensors(shape)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, dims, _ in items:
        n = 2
        for d in dims:
            n *= d
        header[name] = {"dtype": "F16", "shape": list(dims), "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    gen = generator(seed)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name, dims, kind in items:
            data = gen.make(dims, kind)
            if len(data) != header[name]["data_offsets"][1] - header[name]["data_offsets"][0]:
                sys.exit(f"make_bench_models: internal error: {name} has {len(data)} bytes")
            f.write(data)
    return offset


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out_dir")
    ap.add_argument("--tokenizer", required=True, help="folder with the Qwen2 tokenizer (vocab.json + merges.txt)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if not (os.path.isfile(os.path.join(a.tokenizer, "vocab.json")) and os.path.isfile(os.path.join(a.tokenizer, "merges.txt"))) \
            and not os.path.isfile(os.path.join(a.tokenizer, "tokenizer.json")):
        sys.exit(f"make_bench_models: {a.tokenizer}: no tokenizer.json and no vocab.json + merges.txt")
    os.makedirs(a.out_dir, exist_ok=True)
    for f in TOKENIZER_FILES:
        src = os.path.join(a.tokenizer, f)
        if os.path.isfile(src):
            shutil.copyfile(src, os.path.join(a.out_dir, f))
    with open(os.path.join(a.out_dir, "config.json"), "w") as f:
        json.dump(config_dict(a.shape), f, indent=2)
    n = write_safetensors(os.path.join(a.out_dir, "model.safetensors"), a.shape, a.seed)
    print(f"make_bench_models: {a.out_dir}: Qwen2.5-{a.shape} shape, {n / 1e9:.2f} GB of float16 weights")


if __name__ == "__main__":
    main()
