#!/usr/bin/env python3
"""The model that does not fit, both ways, at the same device memory (python3 stdlib only): octo's layer
streaming (qwen_generate --vram-budget B, 512-token prompt, 32 generated) beside llama.cpp's partial
offload (llama-bench -ngl N -p 512 -n 32), N = the number of whole transformer layers (blk.*, the
largest) that fit B; llama.cpp keeps the token embeddings on the host and puts the output head on the
GPU only when every layer is there, so N layers is what its weights take of B. One JSON line each.

  peer_offload.py --gguf FILE --qwen-generate BIN --llama-bench BIN [--budget 4GiB]
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys


def parse_bytes(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|KB|MB|GB)?", s.strip())
    if not m:
        raise ValueError(s)
    mult = {"B": 1, None: 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "KB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2)]
    return int(float(m.group(1)) * mult)


def gguf_tensor_bytes(path):
    """{tensor name: bytes in the file}, from the offsets of the tensor table."""
    with open(path, "rb") as f:
        def rd(fmt):
            n = struct.calcsize(fmt)
            return struct.unpack("<" + fmt, f.read(n))

        def rstr():
            (n,) = rd("Q")
            return f.read(n).decode("utf-8", "replace")

        sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

        def skip(t):
            if t == 8:
                rstr()
            elif t == 9:
                et, n = rd("I")[0], rd("Q")[0]
                if et == 8:
                    for _ in range(n):
                        rstr()
                else:
                    f.seek(sizes[et] * n, 1)
            else:
                f.seek(sizes[t], 1)

        magic = f.read(4)
        if magic != b"GGUF":
            raise RuntimeError("not a GGUF file")
        _version, n_tensors, n_kv = rd("I")[0], rd("Q")[0], rd("Q")[0]
        alignment = 32
        for _ in range(n_kv):
            key = rstr()
            (t,) = rd("I")
            if key == "general.alignment" and t == 4:
                (alignment,) = rd("I")
            else:
                skip(t)
        infos = []
        for _ in range(n_tensors):
            name = rstr()
            (nd,) = rd("I")
            rd("%dQ" % nd)
            _type, off = rd("I")[0], rd("Q")[0]
            infos.append((off, name))
        data_start = (f.tell() + alignment - 1) // alignment * alignment
    end = os.path.getsize(path) - data_start
    infos.sort()
    return {name: (infos[i + 1][0] if i + 1 < len(infos) else end) - off for i, (off, name) in enumerate(infos)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--qwen-generate", required=True)
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--budget", default="4GiB")
    args = ap.parse_args()
    budget = parse_bytes(args.budget)
    layer = {}
    for name, n in gguf_tensor_bytes(args.gguf).items():
        m = re.match(r"blk\.(\d+)\.", name)
        if m:
            layer[int(m.group(1))] = layer.get(int(m.group(1)), 0) + n
    per_layer = max(layer.values())
    ngl = min(len(layer), budget // per_layer)
    model = os.path.basename(args.gguf)
    base = {"model": model, "budget": args.budget, "budget_bytes": budget, "layers": len(layer),
            "layer_bytes": per_layer}
    prompt = "hello" + " hello" * 511
    p = subprocess.run([args.qwen_generate, "--model", args.gguf, "--prompt", prompt, "-n", "32", "--ignore-eos", "--json",
                        "--vram-budget", args.budget], capture_output=True, timeout=300)
    summary = {}
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        if '"summary"' in line:
            summary = json.loads(line)["summary"]
    print(json.dumps(dict(base, name="offload", engine="octo", how="qwen_generate --vram-budget " + args.budget,
                          exit=p.returncode, summary=summary,
                          stderr_tail=p.stderr.decode("utf-8", "replace")[-600:])), flush=True)
    p = subprocess.run([args.llama_bench, "-m", args.gguf, "-ngl", str(ngl), "-p", "512", "-n", "32", "-r", "2", "-o",
                        "jsonl"], capture_output=True, timeout=300)
    rows = [json.loads(l) for l in p.stdout.decode("utf-8", "replace").splitlines() if l.startswith("{")]
    print(json.dumps(dict(base, name="offload", engine="llama.cpp", how="llama-bench -ngl %d" % ngl, ngl=ngl,
                          layer_weight_bytes_on_gpu=ngl * per_layer, exit=p.returncode, rows=rows)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
