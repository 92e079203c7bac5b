#!/usr/bin/env python3
"""Reference token ids for tests/data/tokenizer_corpus.txt from Hugging Face `tokenizers`.

Builds the Qwen2 tokenizer the way Qwen2's own tokenizer.json describes it (NFC normalizer, the Qwen2
Split regex, byte-level BPE from vocab.json + merges.txt, the added tokens of added_tokens.json as
special tokens) and writes one line of ids per corpus record. When `transformers` is importable it also
loads the folder with AutoTokenizer (fast and slow) and reports how often they agree, as a check on the
assembled tokenizer.json.

usage: tokenizer_reference.py --tokenizer DIR --corpus tests/data/tokenizer_corpus.txt --out FILE.ids
"""
import argparse
import json
import os
import sys
import unicodedata

SEPARATOR = "\n----8<----\n"
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def read_corpus(path):
    with open(path, encoding="utf-8", newline="") as f:
        records = f.read().split(SEPARATOR)
    if records[-1] != "":
        sys.exit(f"{path}: does not end with the separator line")
    return records[:-1]


def build_tokenizer(folder, merges_as_pairs):
    from tokenizers import Tokenizer
    with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    merges = []
    with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
        for i, line in enumerate(f.read().split("\n")):
            if not line or (i == 0 and line.startswith("#version")):
                continue
            merges.append(line.split(" ") if merges_as_pairs else line)
    with open(os.path.join(folder, "added_tokens.json"), encoding="utf-8") as f:
        added = json.load(f)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}
                         for c, i in sorted(added.items(), key=lambda kv: kv[1])],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_PATTERN}, "behavior": "Isolated", "invert": False},
            byte_level]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    tok = Tokenizer.from_str(json.dumps(spec))
    for c, i in added.items():
        assert tok.token_to_id(c) == i, (c, i, tok.token_to_id(c))
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer", required=True, help="folder with vocab.json, merges.txt, added_tokens.json")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    records = read_corpus(args.corpus)
    # Qwen2 normalizes to NFC; octo (like llama.cpp) does not, so the corpus must already be NFC for
    # the comparison to be about tokenization alone.
    for i, r in enumerate(records):
        if unicodedata.normalize("NFC", r) != r:
            sys.exit(f"record {i} is not NFC: {r!r}")

    import tokenizers
    print("tokenizers", tokenizers.__version__)
    try:
        tok = build_tokenizer(args.tokenizer, merges_as_pairs=False)
    except Exception as e:  # newer releases may want merges as pairs
        print("string merges rejected:", e, "- retrying with pairs")
        tok = build_tokenizer(args.tokenizer, merges_as_pairs=True)

    ids = [tok.encode(r, add_special_tokens=False).ids for r in records]
    bad_round_trip = sum(tok.decode(x, skip_special_tokens=False) != r for x, r in zip(ids, records))
    print(f"{len(records)} records, {sum(map(len, ids))} tokens, {bad_round_trip} not round tripping in HF")
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        for x in ids:
            f.write(" ".join(map(str, x)) + "\n")

    try:
        import transformers
        from transformers import AutoTokenizer
    except ImportError:
        print("transformers not available: no cross-check")
        return
    print("transformers", transformers.__version__)
    for fast in (True, False):
        try:
            t = AutoTokenizer.from_pretrained(args.tokenizer, use_fast=fast)
            other = [t.encode(r, add_special_tokens=False) for r in records]
        except Exception as e:
            print(f"AutoTokenizer(use_fast={fast}) failed: {e}")
            continue
        diff = [i for i, (a, b) in enumerate(zip(ids, other)) if a != b]
        print(f"AutoTokenizer(use_fast={fast}, {type(t).__name__}): {len(records) - len(diff)} of "
              f"{len(records)} records agree")
        for i in diff[:10]:
            print(f"  record {i} {records[i]!r}: tokenizers {ids[i]} vs {other[i]}")


if __name__ == "__main__":
    main()
