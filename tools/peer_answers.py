#!/usr/bin/env python3
"""Same answers: the first N greedy tokens of a fixed prompt from octo (qwen_generate) and from the peer
(llama.cpp's llama-completion), on one GGUF file; prints one JSON line (python3 stdlib only).

  peer_answers.py --gguf FILE --label L --qwen-generate BIN --llama-completion BIN [--n 32] [--prompt TEXT]
      [--vocab vocab.json] [--hf HF_CHECKPOINT_DIR]

The comparison is on text: octo's --json gives each token's id and text, llama-completion prints the
generated text (--no-display-prompt); token i agrees when octo's text up to and including token i is a
prefix of the peer's text. At the first disagreement octo is run again on the prompt plus the agreed
token ids (--then-ids) with --dump-logits; the peer's token is the longest vocab.json entry that
starts its text; the gap between octo's logits of the two tokens is reported, also scaled by the
logits' standard deviation: a small gap is a near-tie that rounding may flip, a large one a bug. With
--hf (the float16 checkpoint the GGUF was converted from) transformers computes the same position in
float32 on the GPU as the arbiter: which engine's token the reference prefers, and by how much.
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


def byte_level(text):
    """GPT-2 byte-level spelling of text (as vocab.json stores tokens)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, map(chr, cs)))
    return "".join(table[b] for b in text.encode("utf-8", "surrogateescape"))


def peer_token_id(vocab_path, text):
    """The longest vocabulary entry that starts text (greedy decoding emits whole tokens)."""
    with open(vocab_path, encoding="utf-8") as f:
        vocab = json.load(f)
    bl = byte_level(text)
    for n in range(min(len(bl), 64), 0, -1):
        if bl[:n] in vocab:
            return vocab[bl[:n]], bl[:n]
    return None, None


def reference_logits(hf, prompt, ids):
    """float32 logits of the last position of prompt + ids, from the HF checkpoint (torch, transformers)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    tok = AutoTokenizer.from_pretrained(hf)
    prompt_ids = tok(prompt)["input_ids"]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32).to(dev).eval()
    with torch.no_grad():
        out = model(torch.tensor([prompt_ids + list(ids)], device=dev)).logits[0, -1].float().cpu().tolist()
    return out, len(prompt_ids)


def read_npy_f32(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise RuntimeError("not a .npy file")
    hlen = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = (10 if data[6] == 1 else 12) + hlen
    count = (len(data) - start) // 4
    return struct.unpack("<%df" % count, data[start:start + 4 * count])


def summarize(logits, octo_id, peer_id):
    """Top 5, the logits of octo's and the peer's tokens, their gap (absolute and over the logits' SD)."""
    order = sorted(range(len(logits)), key=lambda i: logits[i], reverse=True)
    mean = sum(logits) / len(logits)
    std = math.sqrt(sum((x - mean) ** 2 for x in logits) / len(logits))
    r = {"top5": [[i, round(logits[i], 5)] for i in order[:5]], "argmax": order[0], "std": round(std, 5),
         "octo_token_logit": round(logits[octo_id], 5), "octo_rank": order.index(octo_id)}
    if peer_id is not None and peer_id < len(logits):
        gap = logits[octo_id] - logits[peer_id]
        r.update(peer_token_logit=round(logits[peer_id], 5), peer_rank=order.index(peer_id),
                 octo_minus_peer=round(gap, 5), gap_over_std=round(abs(gap) / std, 5) if std else None,
                 prefers="octo" if gap > 0 else "peer" if gap < 0 else "tie")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--qwen-generate", required=True)
    ap.add_argument("--llama-completion", required=True)
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--prompt", default=PROMPT)
    ap.add_argument("--vocab", help="the tokenizer's vocab.json (finds the peer's token id)")
    ap.add_argument("--hf", help="the float16 HF checkpoint of an F16 GGUF: a float32 reference at the disagreement")
    ap.add_argument("--tokenizer", help="without --hf: the HF tokenizer folder; the reference at a disagreement is then "
                    "the GGUF's own weights dequantized (tools/gguf_reference.py), for quantized files")
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
        agreed = [i for i, _ in toks[:agree]]
        peer_id = None
        if args.vocab:
            peer_id, peer_piece = peer_token_id(args.vocab, text[len(acc):])
            out.update(peer_token_id=peer_id, peer_token=peer_piece)
        # octo's logits where they part: the prompt plus the agreed token ids, prefilled again.
        with tempfile.TemporaryDirectory() as d:
            npy = os.path.join(d, "logits.npy")
            try:
                cmd_ids = ["--then-ids", ",".join(map(str, agreed))] if agreed else []
                p = subprocess.run([args.qwen_generate, "--model", args.gguf, "--prompt", args.prompt, "-n", "1",
                                    "--ignore-eos", "--json", "--dump-logits", npy] + cmd_ids, capture_output=True,
                                   timeout=300)
                if p.returncode != 0:
                    raise RuntimeError(p.stderr.decode(errors="replace")[-300:])
                logits = read_npy_f32(npy)
                out.update(octo_at_disagreement=summarize(logits, toks[agree][0], peer_id))
            except Exception as e:  # noqa: BLE001
                out["logits_error"] = str(e)
        if args.hf or args.tokenizer:
            try:
                if args.hf:
                    ref, n_prompt = reference_logits(args.hf, args.prompt, agreed)
                else:
                    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
                    import gguf_reference
                    ref, n_prompt = gguf_reference.reference_logits(args.gguf, args.tokenizer, args.prompt, agreed)
                    out["reference"] = "dequantized GGUF (tools/gguf_reference.py)"
                out.update(reference_prompt_tokens=n_prompt, reference_at_disagreement=summarize(ref, toks[agree][0], peer_id))
            except Exception as e:  # noqa: BLE001
                out["reference_error"] = "%s: %s" % (type(e).__name__, e)
        o = out.get("octo_at_disagreement", {})
        if "gap_over_std" in o:
            out["top2_gap_over_std"] = o["gap_over_std"]
            out["near_tie"] = o["gap_over_std"] < 0.05 and o.get("peer_rank", 99) < 5
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
