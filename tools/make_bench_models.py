#!/usr/bin/env python3
"""Random-weight Hugging Face checkpoints of published Qwen2.5, Qwen3 and Llama shapes for benchmarks (no internet needed).

Writes MODEL_DIR/{config.json, model.safetensors (or shards of at most --shard-gb GB and
model.safetensors.index.json), tokenizer files}: config.json from transformers' Qwen2Config (Qwen3Config,
LlamaConfig) when it can
be imported (else the same keys by hand), weights N(0, 0.02) in float16 (norms 1, biases 0) generated
on the GPU by torch when present, else by numpy, else by plain Python (a tiled pattern), streamed
tensor by tensor into the shards so a 7B model never sits whole in host memory (one tensor at a time).

  make_bench_models.py SHAPE OUT_DIR --tokenizer DIR [--shard-gb 4]
  (SHAPE: Qwen2.5 0.5b, 1.5b, 3b, 7b, 14b, tiny; qwen3-0.6b, -1.7b, -4b, -8b, -tiny; llama-1b, -8b, -tiny;
  smollm2-135m, -1.7b)
"""
import argparse
import json
import os
import shutil
import struct
import sys

# Published shapes: family, hidden, layers, heads, kv heads, ffn, vocab, tied embeddings, head_dim (0:
# hidden / heads). Qwen2.5 by size alone; Qwen3 and Llama by family-size. The Llama shapes take the Qwen2
# tokenizer (the one the machines have), so their vocabulary is Qwen's 151936, not Llama 3's 128256: the
# LM head is 18% larger than the real model's, the layers are the real ones.
SHAPES = {
    "0.5b": ("qwen2", 896, 24, 14, 2, 4864, 151936, True, 0),
    "1.5b": ("qwen2", 1536, 28, 12, 2, 8960, 151936, True, 0),
    "3b": ("qwen2", 2048, 36, 16, 2, 11008, 151936, True, 0),
    "7b": ("qwen2", 3584, 28, 28, 4, 18944, 152064, False, 0),
    "14b": ("qwen2", 5120, 48, 40, 8, 13824, 152064, False, 0),  # for the multi-GPU pipeline (tools/multi_gpu_bench.sh)
    "tiny": ("qwen2", 256, 2, 4, 2, 512, 151936, True, 0),  # a smoke test on lavapipe (rows of 256: k-quants apply)
    "qwen3-0.6b": ("qwen3", 1024, 28, 16, 8, 3072, 151936, True, 128),
    "qwen3-1.7b": ("qwen3", 2048, 28, 16, 8, 6144, 151936, True, 128),
    "qwen3-4b": ("qwen3", 2560, 36, 32, 8, 9728, 151936, True, 128),
    "qwen3-8b": ("qwen3", 4096, 36, 32, 8, 12288, 151936, False, 128),
    "qwen3-tiny": ("qwen3", 256, 2, 4, 2, 512, 151936, True, 64),  # lavapipe smoke test
    "llama-1b": ("llama", 2048, 16, 32, 8, 8192, 151936, True, 64),  # Llama 3.2 1B's layers
    "llama-8b": ("llama", 4096, 32, 32, 8, 14336, 151936, False, 128),  # Llama 3.1 8B's layers
    "llama-tiny": ("llama", 256, 2, 4, 2, 512, 151936, True, 64),  # lavapipe smoke test
    # SmolLM2's layers (llama, no RoPE scaling, theta 100000): 9 heads over 3 KV heads; 1.7B's 32 KV heads
    # (no grouping).
    "smollm2-135m": ("llama", 576, 30, 9, 3, 1536, 151936, True, 64),
    "smollm2-1.7b": ("llama", 2048, 24, 32, 32, 8192, 151936, True, 64),
}
HF_ARCH = {"qwen2": ("Qwen2ForCausalLM", "Qwen2Config"), "qwen3": ("Qwen3ForCausalLM", "Qwen3Config"),
           "llama": ("LlamaForCausalLM", "LlamaConfig")}


def head_dim(shape):
    _, h, _, heads, _, _, _, _, hd = SHAPES[shape]
    return hd or h // heads


TOKENIZER_FILES = ["vocab.json", "merges.txt", "tokenizer_config.json", "added_tokens.json",
                   "special_tokens_map.json", "tokenizer.json", "LICENSE"]


def config_dict(shape):
    family, h, layers, heads, kv, ffn, vocab, tied, _ = SHAPES[shape]
    arch, config_class = HF_ARCH[family]
    keys = dict(hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                intermediate_size=ffn, vocab_size=vocab, tie_word_embeddings=tied, max_position_embeddings=32768,
                rope_theta=(100000.0 if shape.startswith("smollm2") else 500000.0) if family == "llama" else 1000000.0, rms_norm_eps=1e-6 if family != "llama" else 1e-5,
                hidden_act="silu", bos_token_id=151643, eos_token_id=151643)
    if family == "qwen2":
        keys["use_sliding_window"] = False
    if family != "qwen2":
        keys.update(head_dim=head_dim(shape), attention_bias=False)
    if shape.startswith("llama"):  # Llama 3.1 / 3.2's RoPE scaling (the GGUF gets rope_freqs.weight, as theirs do)
        keys["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0 if shape == "llama-8b" else 32.0,
                                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 8192}
    try:
        import transformers
        cfg = getattr(transformers, config_class)(**keys)
        d = cfg.to_dict()
        d.update(keys)  # transformers 5 may fold some keys (rope_theta) into others; keep them verbatim
        d["architectures"] = [arch]
        d["dtype"] = "float16"
        return d
    except Exception as e:  # transformers missing (the build machine): the same keys by hand
        print(f"make_bench_models: {config_class} unavailable ({type(e).__name__}); writing config.json by hand",
              file=sys.stderr)
        d = dict(keys)
        d.update(architectures=[arch], model_type=family, dtype="float16", attention_dropout=0.0,
                 initializer_range=0.02, use_cache=True)
        if family == "qwen2":
            d.update(sliding_window=None, max_window_layers=layers)
        return d


def tensors(shape):
    """(name, shape, kind) in HF naming (Qwen2, Qwen3 and Llama share it; Qwen2 adds q/k/v biases, Qwen3
    per-head q/k norms); kind: w (random), one (norm), zero (bias)."""
    family, h, layers, heads, kv, ffn, vocab, tied, _ = SHAPES[shape]
    hd = head_dim(shape)
    out = [("model.embed_tokens.weight", (vocab, h), "w")]
    for i in range(layers):
        p = f"model.layers.{i}."
        out.append((p + "input_layernorm.weight", (h,), "one"))
        for proj, rows in (("q", heads * hd), ("k", kv * hd), ("v", kv * hd)):
            out.append((p + f"self_attn.{proj}_proj.weight", (rows, h), "w"))
            if family == "qwen2":
                out.append((p + f"self_attn.{proj}_proj.bias", (rows,), "zero"))
        if family == "qwen3":
            out += [(p + "self_attn.q_norm.weight", (hd,), "one"), (p + "self_attn.k_norm.weight", (hd,), "one")]
        out += [(p + "self_attn.o_proj.weight", (h, heads * hd), "w"),
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
        """Little-endian float16 bytes (a bytes-like object)."""
        if self.torch is not None:
            t = self.torch
            if kind == "w":
                x = t.randn(shape, generator=self.gen, device=self.dev, dtype=t.float16) * 0.02
            else:
                x = (t.ones if kind == "one" else t.zeros)(shape, device=self.dev, dtype=t.float16)
            # A flat uint8 view, copied to the host once; numpy's buffer goes to f.write without another copy.
            return memoryview(x.contiguous().view(-1).view(t.uint8).cpu().numpy())
        np = self.np
        if np is None:
            n = 1
            for d in shape:
                n *= d
            if kind != "w":
                return memoryview(struct.pack("<e", 1.0 if kind == "one" else 0.0) * n)
            reps = -(-2 * n // len(self.pattern))
            return memoryview((self.pattern * reps)[:2 * n])
        if kind == "w":
            x = (self.rng.standard_normal(shape, dtype=np.float32) * 0.02).astype("<f2")
        else:
            x = (np.ones if kind == "one" else np.zeros)(shape, dtype="<f2")
        return memoryview(x.reshape(-1).view(np.uint8))


def nbytes(dims):
    n = 2
    for d in dims:
        n *= d
    return n


def write_safetensors(out_dir, shape, seed, shard_bytes):
    """Writes the shards (tensors in order, a new shard when the next tensor would pass shard_bytes);
    returns the total bytes of weights."""
    items = tensors(shape)
    shards, cur, size = [], [], 0
    for item in items:
        if cur and size + nbytes(item[1]) > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append(item)
        size += nbytes(item[1])
    shards.append(cur)
    names = ["model.safetensors"] if len(shards) == 1 else \
        [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    for old in os.listdir(out_dir):  # shards of an earlier run with another layout
        if old.startswith("model") and (old.endswith(".safetensors") or old.endswith(".index.json")):
            os.remove(os.path.join(out_dir, old))
    gen = generator(seed)
    weight_map, total = {}, 0
    for file_name, shard in zip(names, shards):
        header, offset = {"__metadata__": {"format": "pt"}}, 0
        for name, dims, _ in shard:
            header[name] = {"dtype": "F16", "shape": list(dims), "data_offsets": [offset, offset + nbytes(dims)]}
            offset += nbytes(dims)
            weight_map[name] = file_name
        blob = json.dumps(header, separators=(",", ":")).encode()
        blob += b" " * (-len(blob) % 8)
        with open(os.path.join(out_dir, file_name), "wb") as f:
            f.write(struct.pack("<Q", len(blob)))
            f.write(blob)
            for name, dims, kind in shard:
                data = gen.make(dims, kind)
                if data.nbytes != nbytes(dims):
                    sys.exit(f"make_bench_models: internal error: {name} has {data.nbytes} bytes")
                f.write(data)
                del data
        total += offset
    if len(shards) > 1:
        with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    return total, len(shards)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out_dir")
    ap.add_argument("--tokenizer", required=True, help="folder with the Qwen2 tokenizer (vocab.json + merges.txt)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard-gb", type=float, default=4.0, help="largest shard in GB (default 4)")
    a = ap.parse_args()
    if a.shard_gb <= 0:
        sys.exit("make_bench_models: --shard-gb must be positive")
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
    n, shards = write_safetensors(a.out_dir, a.shape, a.seed, int(a.shard_gb * 1e9))
    print(f"make_bench_models: {a.out_dir}: {a.shape} shape ({SHAPES[a.shape][0]}), {n / 1e9:.2f} GB of float16 weights "
          f"in {shards} shard(s)")


if __name__ == "__main__":
    main()
