#!/usr/bin/env python3
"""Same answers: the first N greedy tokens of a fixed prompt from octo (qwen_generate) and from the peer
(llama.cpp's llama-completion), on one GGUF file; prints one JSON line (python3 stdlib only).

  peer_answers.py --gguf FILE --label L --qwen-generate BIN --llama-completion BIN [--n 32] [--prompt TEXT]

The comparison is on text: octo's --json gives each token's id and text, llama-completion prints the
generated text (--no-display-prompt); token i agrees when octo's text up to and including token i is a
prefix of the peer's text. At the first disagreement octo is run again on the prompt plus the agreed
text with --dump-logits, and the gap between its two best logits there is reported (scaled by the
logits' standard deviation): a small gap is a near-tie that rounding may flip, a large one a bug.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

PROMPT = "The history of the city begins with a small harbour, where fishermen"


def octo(args, prompt, n, dump=None):
    cmd = [args.qwen_generate, "--model", args.gguf, "--prompt", prompt, "-n", str(n), "--ignore-eos", "--json"]
    if dump:
        cmd += ["--dump-logits", dump]
    p = subprocess.run(cmd, capture_output=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("qwen_generate: exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-400:]))
    toks, summary = [], {}
    for line in p.stdout.decode("utf-8", "surrogateescape").splitlines():
        if not line.strip():
            continue
        o = json.loads(line)
        if "summary" in o:
            summary = o["summary"]
        elif o.get("id", -1) >= 0:
            toks.append((o["id"], o["text"]))
        elif toks:  # the token stream's tail (an incomplete UTF-8 sequence at the end)
            toks[-1] = (toks[-1][0], toks[-1][1] + o["text"])
    return toks, summary


def peer(args, prompt, n):
    cmd = [args.llama_completion, "-m", args.gguf, "-p", prompt, "-n", str(n), "--temp", "0", "--top-k", "1",
           "--ignore-eos", "-no-cnv", "--no-display-prompt", "-ngl", "99", "-c", "4096", "-s", "0", "--no-warmup"]
    p = subprocess.run(cmd, capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise RuntimeError("llama-completion: exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-400:]))
    return p.stdout.decode("utf-8", "surrogateescape")


def read_npy_f32(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise RuntimeError("not a .npy file")
    hlen = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = (10 if data[6] == 1 else 12) + hlen
    count = (len(data) - start) // 4
    return struct.unpack("<%df" % count, data[start:start + 4 * count])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--qwen-generate", required=True)
    ap.add_argument("--llama-completion", required=True)
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--prompt", default=PROMPT)
    args = ap.parse_args()
    out = {"name": "answers", "label": args.label, "model": os.path.basename(args.gguf), "prompt": args.prompt,
           "n": args.n}
    try:
        toks, summary = octo(args, args.prompt, args.n)
        text = peer(args, args.prompt, args.n)
    except Exception as e:  # noqa: BLE001 - reported, the harness goes on
        out["error"] = str(e)
        print(json.dumps(out))
        return 1
    agree, acc = 0, ""
    for _, t in toks:
        if not text.startswith(acc + t):
            break
        acc += t
        agree += 1
    out.update(octo_ids=[i for i, _ in toks], octo_text=acc + "".join(t for _, t in toks[agree:]), peer_text=text,
               agree_tokens=agree, all_agree=agree == len(toks) and len(toks) == args.n,
               prompt_tokens=summary.get("prompt_tokens"))
    if agree < len(toks):
        out["first_disagreement"] = agree
        out["octo_token"] = toks[agree][1]
        out["peer_continuation"] = text[len(acc):len(acc) + 24]
        # octo's logits where they part: the prompt plus the agreed text, re-tokenized (checked by count).
        with tempfile.TemporaryDirectory() as d:
            npy = os.path.join(d, "logits.npy")
            try:
                toks2, s2 = octo(args, args.prompt + acc, 1, dump=npy)
                logits = read_npy_f32(npy)
                order = sorted(range(len(logits)), key=lambda i: logits[i], reverse=True)[:5]
                mean = sum(logits) / len(logits)
                std = math.sqrt(sum((x - mean) ** 2 for x in logits) / len(logits))
                gap = logits[order[0]] - logits[order[1]]
                out.update(retokenized_prompt_tokens=s2.get("prompt_tokens"),
                           retokenized_same_count=s2.get("prompt_tokens") == (summary.get("prompt_tokens") or 0) + agree,
                           octo_top5=[[i, round(logits[i], 5)] for i in order], octo_top1_is_generated=order[0] == toks[agree][0],
                           top2_gap=round(gap, 5), logit_std=round(std, 5), top2_gap_over_std=round(gap / std, 5) if std else None,
                           near_tie=bool(std) and gap / std < 0.05)
            except Exception as e:  # noqa: BLE001
                out["logits_error"] = str(e)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
