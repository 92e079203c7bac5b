"""Train octo's default model: a small Qwen2-architecture LM (QKV bias, tied embeddings, NeoX RoPE, GQA)
on the procedural corpus of corpus.py, with a byte-level BPE vocabulary trained here and the Qwen2
pre-tokenizer (digits split one by one).

Runs on one CUDA GPU with PyTorch, transformers and tokenizers; needs no network. Reproducible from
--seed. Writes into --out:
  tokenizer.json          the trained tokenizer (Hugging Face format)
  config.json, model.safetensors   the Qwen2ForCausalLM checkpoint, weights stored as F16
  reference.json          held-out sum prompts with PyTorch's greedy answers (computed from the F16
                          checkpoint in float32), accuracy, and a greedy story continuation
  train_log.txt           the loss curve and the evaluation summary

Usage: python3 tools/tiny_qwen/train.py --out DIR [--steps 8000] [--seed 1234]
"""
import argparse
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
N_TEST = 50        # the prompts octo's test replays
N_EVAL = 1000      # held-out sums for the accuracy figure


def train_tokenizer(seed: int, vocab_size: int, excluded: set):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    docs = corpus.documents(seed + 1, excluded)
    tok.train_from_iterator((next(docs) for _ in range(40000)), trainer=trainer)
    return tok


def make_tokens(tok, seed: int, excluded: set, n_tokens: int, sum_fraction: float) -> torch.Tensor:
    eot = tok.token_to_id("<|endoftext|>")
    docs = corpus.documents(seed, excluded, sum_fraction)
    out, total = [], 0
    while total < n_tokens:
        batch = [next(docs) for _ in range(20000)]
        for enc in tok.encode_batch(batch):
            out.append(enc.ids + [eot])
            total += len(enc.ids) + 1
    flat = [t for d in out for t in d]
    return torch.tensor(flat[:n_tokens], dtype=torch.int32)


@torch.no_grad()
def greedy(model, tok, prompt: str, max_new: int, stop: str | None) -> list[int]:
    ids = tok.encode(prompt).ids
    x = torch.tensor([ids], device="cuda")
    out = model.generate(x, max_new_tokens=max_new, do_sample=False, pad_token_id=0,
                         attention_mask=torch.ones_like(x))
    new = out[0, len(ids):].tolist()
    if stop is not None:
        stop_id = tok.token_to_id(stop)
        if stop_id in new:
            new = new[:new.index(stop_id) + 1]
    return new


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--sum-fraction", type=float, default=0.65, help="share of documents that are sums")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--ffn", type=int, default=512)
    ap.add_argument("--pool", type=int, default=80_000_000, help="tokens of generated corpus to sample from")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    log = open(os.path.join(args.out, "train_log.txt"), "w")

    def say(msg):
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    held = corpus.held_out_sums(args.seed, N_TEST + N_EVAL)
    excluded = set(held)
    t0 = time.time()
    tok = train_tokenizer(args.seed, args.vocab, excluded)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    say(f"tokenizer: {tok.get_vocab_size()} tokens ({time.time() - t0:.1f} s)")

    # A fixed pool, sampled by random windows: generating every training token in Python would take
    # longer than the training itself.
    n_tokens = min(args.steps * args.batch * args.seq, args.pool) + args.seq + 1
    t0 = time.time()
    data = make_tokens(tok, args.seed, excluded, n_tokens, args.sum_fraction).cuda()
    say(f"corpus: {n_tokens} tokens ({time.time() - t0:.1f} s)")

    from transformers import Qwen2Config, Qwen2ForCausalLM
    vocab = tok.get_vocab_size()
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=256, intermediate_size=args.ffn, num_hidden_layers=args.layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
                      bos_token_id=tok.token_to_id("<|endoftext|>"), eos_token_id=tok.token_to_id("<|endoftext|>"))
    model = Qwen2ForCausalLM(cfg).cuda()
    n_params = sum(p.numel() for p in model.parameters())
    say(f"model: {n_params} parameters, config {cfg.to_diff_dict()}")

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    warm = 200
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps)))
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    model.train()
    t0 = time.time()
    for step in range(args.steps):
        starts = torch.randint(0, data.numel() - args.seq - 1, (args.batch,), device="cuda", generator=gen)
        idx = starts[:, None] + torch.arange(args.seq + 1, device="cuda")[None, :]
        chunk = data[idx].long()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=chunk[:, :-1], labels=chunk[:, :-1].clone()).loss
        # labels are shifted inside the model; the last input position has no target
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0 or step == args.steps - 1:
            say(f"step {step:5d}  loss {loss.item():.4f}  lr {sched.get_last_lr()[0]:.2e}  {time.time() - t0:.0f} s")

    # The checkpoint is stored in F16; the reference answers come from exactly those weights, in float32.
    model = model.half().float().eval()
    model.save_pretrained(args.out, safe_serialization=True)
    from safetensors.torch import load_file, save_file
    st = os.path.join(args.out, "model.safetensors")
    save_file({k: v.half().contiguous() for k, v in load_file(st).items()}, st, metadata={"format": "pt"})

    correct, tests = 0, []
    for i, (a, b) in enumerate(held):
        prompt = f"{a}+{b}="
        ids = greedy(model, tok, prompt, 6, None)
        text = tok.decode(ids)
        answer = text.split("\n")[0]
        ok = answer == str(a + b)
        if i < N_TEST:
            tests.append({"prompt": prompt, "prompt_ids": tok.encode(prompt).ids, "greedy_ids": ids,
                          "answer": answer, "correct": ok})
        else:
            correct += ok
    acc = correct / N_EVAL
    test_acc = sum(t["correct"] for t in tests) / N_TEST
    story_prompt = "Once upon a time, there was a"
    story_ids = greedy(model, tok, story_prompt, 64, "<|endoftext|>")
    say(f"held-out sums: {acc * 100:.1f}% of {N_EVAL} correct; test prompts {test_acc * 100:.0f}% of {N_TEST}")
    say(f"story: {story_prompt}{tok.decode(story_ids)}")
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump({"seed": args.seed, "steps": args.steps, "parameters": n_params,
                   "heldout_accuracy": acc, "heldout_count": N_EVAL, "test_accuracy": test_acc,
                   "tests": tests, "story": {"prompt": story_prompt, "prompt_ids": tok.encode(story_prompt).ids,
                                              "greedy_ids": story_ids}}, f, indent=1)


if __name__ == "__main__":
    main()
