#!/usr/bin/env python3
"""octo beside llama.cpp's Vulkan backend, from one harness run (tools/h100_bench.sh peer / peer7b):
writes DIR/peer-table.md and DIR/peer-table.jsonl (python3 stdlib only).

  peer_table.py DIR [--bandwidth-gbs 3071]

Reads DIR/decode.jsonl (bench_decode), peer-bench.jsonl (llama-bench -o jsonl), user.jsonl (qwen_generate
--json summaries), answers.jsonl (tools/peer_answers.py), offload.jsonl (tools/peer_offload.py) and
peer.json (tools/build_peer.sh). Decode's bound: tok/s x the weight bytes one token reads (bench_decode's
weight_bytes_per_token, the same file for both engines) over the measured HBM read bandwidth.
"""
import argparse
import json
import os
import sys


def read_jsonl(path):
    rows = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    return rows


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def median_ts(r):
    """llama-bench's median repetition (tok/s), its mean where the samples are missing."""
    xs = sorted(r.get("samples_ts") or [])
    if not xs:
        return r.get("avg_ts")
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def ratio(a, b):
    return a / b if a and b else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--bandwidth-gbs", type=float, default=3071.0)
    args = ap.parse_args()
    d, bw = args.dir, args.bandwidth_gbs * 1e9
    octo = {r["model"]: r for r in read_jsonl(os.path.join(d, "decode.jsonl")) if "model" in r and "error" not in r}
    peer = {}
    for r in read_jsonl(os.path.join(d, "peer-bench.jsonl")):
        if "model_filename" not in r:
            continue
        m = peer.setdefault(os.path.basename(r["model_filename"]), {})
        if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0:
            m["pp"] = r
        elif r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0:
            m["tg"] = r
    user = {r["model"]: r.get("summary", {}) for r in read_jsonl(os.path.join(d, "user.jsonl")) if "model" in r}
    answers = {r["model"]: r for r in read_jsonl(os.path.join(d, "answers.jsonl")) if "model" in r}
    meta = {}
    if os.path.exists(os.path.join(d, "peer.json")):
        with open(os.path.join(d, "peer.json")) as f:
            meta = json.load(f)

    def size_key(m):  # qwen2.5-1.5b-f16.gguf -> 1.5
        try:
            return (float(m.split("-")[1].rstrip("b")), m)
        except (IndexError, ValueError):
            return (0.0, m)

    models = sorted(set(octo) | set(peer), key=size_key)
    rows = []
    for m in models:
        o, p, u, a = octo.get(m, {}), peer.get(m, {}), user.get(m, {}), answers.get(m, {})
        bytes_tok = o.get("weight_bytes_per_token")
        dec_o, pre_o = o.get("decode_tok_s"), o.get("prefill_tok_s")
        dec_p = median_ts(p["tg"]) if "tg" in p else None
        pre_p = median_ts(p["pp"]) if "pp" in p else None
        dec_u, pre_u = u.get("decode_tok_s"), u.get("prefill_tok_s")
        frac = (lambda t: t * bytes_tok / bw if t and bytes_tok else None)
        rows.append({
            "model": m, "file_gb": (o.get("file_bytes") or 0) / 1e9 or None, "weight_bytes_per_token": bytes_tok,
            "decode_octo": dec_o, "decode_peer": dec_p, "decode_ratio": ratio(dec_o, dec_p),
            "decode_peer_mean": p.get("tg", {}).get("avg_ts"), "decode_peer_stddev": p.get("tg", {}).get("stddev_ts"),
            "decode_octo_bound": frac(dec_o), "decode_peer_bound": frac(dec_p),
            "decode_user": dec_u, "decode_user_ratio": ratio(dec_u, dec_p), "decode_user_bound": frac(dec_u),
            "pp512_octo": pre_o, "pp512_peer": pre_p, "pp512_ratio": ratio(pre_o, pre_p),
            "pp512_peer_mean": p.get("pp", {}).get("avg_ts"), "pp512_peer_stddev": p.get("pp", {}).get("stddev_ts"),
            "pp512_user": pre_u, "pp512_user_ratio": ratio(pre_u, pre_p), "user_prompt_tokens": u.get("prompt_tokens"),
            "user_generated": u.get("decode_tokens"),
            "greedy_agree": a.get("agree_tokens"), "greedy_n": a.get("n"), "greedy_error": a.get("error"),
            "near_tie": a.get("near_tie"), "top2_gap_over_std": a.get("top2_gap_over_std"),
            "greedy_octo": a.get("octo_at_disagreement"), "greedy_reference": a.get("reference_at_disagreement"),
        })
    offload = read_jsonl(os.path.join(d, "offload.jsonl"))

    with open(os.path.join(d, "peer-table.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(dict(r, name="peer-table", peer=meta.get("commit"), bandwidth_gbs=args.bandwidth_gbs)) + "\n")
        for r in offload:
            f.write(json.dumps(r) + "\n")

    gpu = next((r.get("device") for r in octo.values() if r.get("device")), None) or \
        next((x.get("gpu_info") for v in peer.values() for x in v.values() if x.get("gpu_info")), "?")
    out = [f"# octo beside llama.cpp (Vulkan) on {gpu}, same GGUF files, same run", "",
           f"Peer: llama.cpp {meta.get('commit', '?')[:8]} ggml-vulkan, glslc `{meta.get('glslc', '?')}`: "
           "Debian's glslc has no GL_KHR_cooperative_matrix, so **the peer has no tensor-core (coopmat) path** "
           f"({meta.get('cooperative_matrix_configure', '?')}). Built: {meta.get('built_with', '?')}.",
           f"Bound: decode tok/s x weight bytes per token / {args.bandwidth_gbs:.0f} GB/s (measured HBM read); "
           "prefill is compute-bound (no bound given). octo = bench_decode (512-token prefill, 127 decode steps); "
           "peer = llama-bench -p 512 -n 128 -ngl 99 (median of 5 repetitions); user = qwen_generate defaults, "
           "512-token prompt, 128 generated. Greedy: how many of the first 32 greedy tokens of one fixed prompt agree "
           "(tools/peer_answers.py); where they part, octo's logit of its token minus the peer's token's, and "
           "for F16 which token a float32 transformers run of the source checkpoint prefers. Random-weight Qwen2.5-shaped models.", "",
           "| model | GB | decode octo | decode peer | octo/peer | bound octo | bound peer | decode user | user/peer "
           "| pp512 octo | pp512 peer | octo/peer | pp512 user | user/peer | greedy agree |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if r["greedy_error"]:
            agree = "error"
        elif r["greedy_agree"] is None:
            agree = "-"
        else:
            agree = f"{r['greedy_agree']}/{r['greedy_n']}"
            o, ref = r["greedy_octo"] or {}, r["greedy_reference"] or {}
            if r["greedy_agree"] < (r["greedy_n"] or 0) and "octo_minus_peer" in o:
                agree += (f"; octo's logits: {o['octo_minus_peer']:+.3f} ({o['gap_over_std']:.3f} sd) for its own token"
                          f"{', near-tie' if r['near_tie'] else ''}")
            if ref.get("prefers"):
                agree += f"; fp32 reference prefers {ref['prefers']}'s by {abs(ref['octo_minus_peer']):.3f}"
        out.append(f"| {r['model'].removesuffix('.gguf')} | {fmt(r['file_gb'], 2)} | {fmt(r['decode_octo'])} | "
                   f"{fmt(r['decode_peer'])} | {fmt(r['decode_ratio'], 2)} | {fmt(r['decode_octo_bound'], 3)} | "
                   f"{fmt(r['decode_peer_bound'], 3)} | {fmt(r['decode_user'])} | {fmt(r['decode_user_ratio'], 2)} | "
                   f"{fmt(r['pp512_octo'])} | {fmt(r['pp512_peer'])} | {fmt(r['pp512_ratio'], 2)} | "
                   f"{fmt(r['pp512_user'])} | {fmt(r['pp512_user_ratio'], 2)} | {agree} |")
    if offload:
        out += ["", "## When it does not fit: octo streaming vs llama.cpp partial offload, same device memory", "",
                "| model | how | GPU weights | prefill tok/s | decode tok/s |", "| --- | --- | --- | ---: | ---: |"]
        for r in offload:
            if r.get("engine") == "octo":
                s = r.get("summary", {})
                out.append(f"| {r['model']} | octo {r['how']} | {r['budget']} | {fmt(s.get('prefill_tok_s'))} | "
                           f"{fmt(s.get('decode_tok_s'))} |")
            else:
                pp = next((x["avg_ts"] for x in r.get("rows", []) if x.get("n_gen") == 0), None)
                tg = next((x["avg_ts"] for x in r.get("rows", []) if x.get("n_prompt") == 0), None)
                out.append(f"| {r['model']} | llama.cpp {r['how']} | {r['ngl']} of {r['layers']} layers "
                           f"({r['layer_weight_bytes_on_gpu'] / 2**30:.2f} GiB) | {fmt(pp)} | {fmt(tg)} |")
    text = "\n".join(out) + "\n"
    with open(os.path.join(d, "peer-table.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
