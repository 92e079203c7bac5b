#!/usr/bin/env python3
"""An arbiter for a quantized GGUF that neither engine computes: the file's weights dequantized in numpy
(written here from the GGUF block layouts, sharing no code with octo or llama.cpp), loaded into Hugging
Face transformers' Qwen2 model in float32, and run on the GPU. Where octo and the peer disagree on a
quantized file, both read the same quantized weights; this computes what those weights define.

  gguf_reference.py --gguf FILE --tokenizer DIR --prompt TEXT [--ids 1,2,3] [--top 5]
      prints one JSON line: the prompt's token count and the top logits of the last position.

Supported tensor types: F32, F16, BF16, Q8_0, Q4_K, Q6_K (what tools/make_bench_models.sh's F16, Q8_0 and
Q4_K_M files hold), IQ4_NL, IQ4_XS; any other type is refused with its name. Architecture: qwen2 (the benchmark models).
Needs numpy, torch, transformers (the GPU machine has them).
"""
import argparse
import json
import struct
import sys

GGUF_VALUE = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
# ggml type id -> (name, elements per block, bytes per block)
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 30: ("BF16", 1, 2), 8: ("Q8_0", 32, 34), 12: ("Q4_K", 256, 144),
              14: ("Q6_K", 256, 210), 20: ("IQ4_NL", 32, 18), 23: ("IQ4_XS", 256, 136)}
GGML_NAMES = {2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 10: "Q2_K", 11: "Q3_K", 13: "Q5_K"}
# IQ4_NL / IQ4_XS: 4-bit indices into this fixed non-linear table (GGUF's kvalues_iq4nl).
IQ4_TABLE = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def scalar(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.scalar("<Q")
        s = bytes(self.data[self.at:self.at + n]).decode("utf-8", "replace")
        self.at += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.scalar("<I"), self.scalar("<Q")
            if et in GGUF_VALUE and et != 8:  # skip numeric arrays (token scores, types): not needed here
                self.at += n * struct.calcsize(GGUF_VALUE[et])
                return None
            return [self.value(et) for _ in range(n)]
        return self.scalar(GGUF_VALUE[t])


def read_gguf(path):
    """(metadata dict, {name: (ggml type, dims (fastest first), byte offset)}, the mapped file)."""
    import numpy as np
    data = np.memmap(path, dtype=np.uint8, mode="r")
    r = Reader(data)
    if bytes(data[:4]) != b"GGUF":
        raise ValueError("%s: not a GGUF file" % path)
    r.at = 4
    version, n_tensors, n_kv = r.scalar("<I"), r.scalar("<Q"), r.scalar("<Q")
    if version < 2:
        raise ValueError("%s: GGUF version %d is not supported" % (path, version))
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.scalar("<I"))
    tensors = {}
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.scalar("<Q") for _ in range(r.scalar("<I"))]
        t, off = r.scalar("<I"), r.scalar("<Q")
        tensors[name] = (t, dims, off)
    align = meta.get("general.alignment", 32)
    base = (r.at + align - 1) // align * align
    return meta, {k: (t, d, base + o) for k, (t, d, o) in tensors.items()}, data


def dequantize(data, t, dims, off):
    """float32 array of shape reversed(dims) (rows x columns for a matrix)."""
    import numpy as np
    if t not in GGML_TYPES:
        raise ValueError("tensor type %s is not supported by this reference" % GGML_NAMES.get(t, "ggml type %d" % t))
    name, be, bb = GGML_TYPES[t]
    n = 1
    for d in dims:
        n *= d
    raw = np.asarray(data[off:off + n // be * bb])
    f16 = lambda b: b.copy().view(np.float16).astype(np.float32)  # noqa: E731 - little-endian halves
    if name == "F32":
        out = raw.view(np.float32).astype(np.float32)
    elif name == "F16":
        out = raw.view(np.float16).astype(np.float32)
    elif name == "BF16":
        out = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    elif name == "Q8_0":  # d (f16), 32 x int8: x = d * q
        b = raw.reshape(-1, 34)
        out = f16(b[:, :2]) * b[:, 2:].view(np.int8).astype(np.float32)
    elif name == "Q4_K":  # d, dmin (f16), 12 bytes of 6-bit scales/mins for 8 sub-blocks, 128 bytes of nibbles
        b = raw.reshape(-1, 144)
        d, dmin = f16(b[:, 0:2])[:, :, None], f16(b[:, 2:4])[:, :, None]  # one per block, over 8 x 32 values
        s, qs = b[:, 4:16].astype(np.int32), b[:, 16:]
        sc = np.empty((b.shape[0], 8), np.float32)
        mn = np.empty((b.shape[0], 8), np.float32)
        for j in range(8):
            if j < 4:
                sc[:, j], mn[:, j] = s[:, j] & 63, s[:, j + 4] & 63
            else:
                sc[:, j] = (s[:, j + 4] & 0xF) | ((s[:, j - 4] >> 6) << 4)
                mn[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
        q = qs.reshape(-1, 4, 32)  # four groups of 64 elements: low nibbles, then high nibbles
        vals = np.stack([q & 0xF, q >> 4], axis=2).reshape(-1, 8, 32).astype(np.float32)
        out = d * sc[:, :, None] * vals - dmin * mn[:, :, None]
    elif name == "Q6_K":  # ql[128] low nibbles, qh[64] high 2 bits, int8 scales[16], d (f16)
        b = raw.reshape(-1, 210)
        ql, qh = b[:, :128].astype(np.int32), b[:, 128:192].astype(np.int32)
        sc, d = b[:, 192:208].view(np.int8).astype(np.float32), f16(b[:, 208:210])
        vals = np.empty((b.shape[0], 256), np.float32)
        for h in range(2):  # two halves of 128 elements
            l_ = ql[:, 64 * h:64 * h + 64]
            hb = qh[:, 32 * h:32 * h + 32]
            parts = [(l_[:, :32] & 0xF) | ((hb & 3) << 4), (l_[:, 32:] & 0xF) | (((hb >> 2) & 3) << 4),
                     (l_[:, :32] >> 4) | (((hb >> 4) & 3) << 4), (l_[:, 32:] >> 4) | (((hb >> 6) & 3) << 4)]
            for p, q in enumerate(parts):
                for half16 in range(2):
                    cols = slice(16 * half16, 16 * half16 + 16)
                    scale = sc[:, 8 * h + 2 * p + half16][:, None]
                    vals[:, 128 * h + 32 * p + 16 * half16:128 * h + 32 * p + 16 * half16 + 16] = \
                        d * scale * (q[:, cols] - 32)
        out = vals
    elif name in ("IQ4_NL", "IQ4_XS"):
        # 32-element runs of 16 bytes: byte j holds element j (low nibble) and j + 16 (high nibble).
        table = np.array(IQ4_TABLE, np.float32)

        def runs(qs):  # (n, 16) bytes -> (n, 32) table values
            return table[np.concatenate([qs & 0xF, qs >> 4], axis=1)]
        if name == "IQ4_NL":  # d (f16), qs[16]: x = d * table[q]
            b = raw.reshape(-1, 18)
            out = f16(b[:, :2]) * runs(b[:, 2:])
        else:  # d (f16), scales_h (u16), scales_l[4], qs[128]: sub-block ib's step d * (ls - 32)
            b = raw.reshape(-1, 136)
            d = f16(b[:, :2])
            sh = b[:, 2:4].copy().view(np.uint16).astype(np.int32)  # (n, 1)
            sl = b[:, 4:8].astype(np.int32)
            ib = np.arange(8)
            ls = ((sl[:, ib // 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4)  # (n, 8)
            vals = runs(b[:, 8:].reshape(-1, 16)).reshape(-1, 8, 32)
            out = (d[:, :, None] * (ls - 32).astype(np.float32)[:, :, None]) * vals
    return out.reshape(list(reversed(dims)))


def qwen2_model(path, device):
    """transformers' Qwen2ForCausalLM (float32) holding the GGUF's dequantized weights."""
    import numpy as np
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    meta, tensors, data = read_gguf(path)
    arch = meta.get("general.architecture")
    if arch != "qwen2":
        raise ValueError("%s: architecture %r; this reference builds qwen2 only" % (path, arch))
    p = "qwen2."
    vocab = tensors["token_embd.weight"][1][1]
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=meta[p + "embedding_length"],
                      intermediate_size=meta[p + "feed_forward_length"], num_hidden_layers=meta[p + "block_count"],
                      num_attention_heads=meta[p + "attention.head_count"],
                      num_key_value_heads=meta[p + "attention.head_count_kv"],
                      rms_norm_eps=meta[p + "attention.layer_norm_rms_epsilon"],
                      rope_theta=meta.get(p + "rope.freq_base", 10000.0),
                      max_position_embeddings=meta.get(p + "context_length", 32768),
                      tie_word_embeddings="output.weight" not in tensors, torch_dtype="float32")
    with torch.device("meta"):
        model = Qwen2ForCausalLM(cfg)
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    per_layer = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
                 "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
                 "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                 "ffn_down": "mlp.down_proj"}
    state = {}
    for gname, (t, dims, off) in tensors.items():
        if gname in names:
            hname = names[gname]
        else:
            parts = gname.split(".")
            if len(parts) != 4 or parts[0] != "blk" or parts[2] not in per_layer:
                raise ValueError("%s: unexpected tensor %s" % (path, gname))
            hname = "model.layers.%s.%s.%s" % (parts[1], per_layer[parts[2]], parts[3])
        state[hname] = torch.from_numpy(np.ascontiguousarray(dequantize(data, t, dims, off)))
    if cfg.tie_word_embeddings:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state, strict=True, assign=True)
    if cfg.tie_word_embeddings:
        model.tie_weights()
    model.model.rotary_emb = type(model.model.rotary_emb)(config=cfg)  # its buffers were on the meta device
    return model.to(device).eval()


def reference_logits(gguf, tokenizer, prompt, ids):
    """float32 logits of the last position of prompt + ids, from the dequantized GGUF."""
    import torch
    from transformers import AutoTokenizer
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    prompt_ids = AutoTokenizer.from_pretrained(tokenizer)(prompt)["input_ids"]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = qwen2_model(gguf, dev)
    with torch.no_grad():
        out = model(torch.tensor([prompt_ids + list(ids)], device=dev)).logits[0, -1].float().cpu().tolist()
    return out, len(prompt_ids)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--tokenizer", required=True, help="folder with the HF tokenizer files")
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--ids", default="", help="token ids appended after the prompt, comma-separated")
    ap.add_argument("--top", type=int, default=5)
    a = ap.parse_args()
    ids = [int(x) for x in a.ids.split(",") if x.strip()]
    try:
        logits, n = reference_logits(a.gguf, a.tokenizer, a.prompt, ids)
    except (ValueError, OSError, KeyError) as e:
        print("gguf_reference.py: %s" % e, file=sys.stderr)
        return 1
    order = sorted(range(len(logits)), key=lambda i: logits[i], reverse=True)
    print(json.dumps({"prompt_tokens": n, "top": [[i, round(logits[i], 5)] for i in order[:a.top]]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
