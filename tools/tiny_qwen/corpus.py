"""Procedural training corpus for octo's default model: short stories from a small grammar, and sums.

Everything is generated from a seed, so the corpus (and the model trained on it) is reproducible.
Sums are written "317+48=365"; a fixed held-out set of sums never appears in training, so accuracy is
measured on problems the model has not seen.
"""
import random

NAMES = ["Tom", "Lily", "Max", "Mia", "Ben", "Anna", "Sam", "Zoe", "Leo", "Ella", "Finn", "Rosa", "Jack", "Nora"]
ANIMALS = ["cat", "dog", "bird", "fox", "rabbit", "duck", "frog", "bear", "mouse", "owl", "fish", "horse"]
OBJECTS = ["ball", "kite", "box", "hat", "book", "cake", "flower", "stone", "boat", "drum", "key", "cup", "star", "apple"]
ADJS = ["red", "big", "small", "blue", "shiny", "soft", "old", "happy", "green", "tiny", "yellow", "funny"]
PLACES = ["park", "garden", "forest", "river", "house", "school", "beach", "hill", "farm", "town", "lake", "shop"]
FEELINGS = ["happy", "sad", "surprised", "sleepy", "brave", "scared", "proud", "excited"]
VERBS_PAST = ["found", "lost", "saw", "made", "painted", "carried", "shared", "hid", "dropped", "washed"]
WEATHER = ["sunny", "rainy", "windy", "cold", "warm", "snowy"]


def story(rng: random.Random) -> str:
    a, b = rng.sample(NAMES, 2)
    animal, obj, obj2 = rng.choice(ANIMALS), rng.choice(OBJECTS), rng.choice(OBJECTS)
    adj, adj2 = rng.choice(ADJS), rng.choice(ADJS)
    place, place2 = rng.sample(PLACES, 2)
    feel, feel2 = rng.choice(FEELINGS), rng.choice(FEELINGS)
    verb = rng.choice(VERBS_PAST)
    weather = rng.choice(WEATHER)
    openings = [
        f"Once upon a time, there was a {adj} {animal} named {a}.",
        f"One {weather} day, {a} went to the {place}.",
        f"{a} had a {adj} {obj}.",
        f"There was a little {animal} who lived near the {place}.",
    ]
    middles = [
        f"{a} {verb} a {adj2} {obj2} in the {place2}.",
        f"{a} met {b} at the {place2}. They played with the {obj} all day.",
        f"{b} wanted the {obj} too. {a} said, \"We can share it.\"",
        f"The {animal} was {feel}. It ran to the {place2} to find {b}.",
        f"{a} and {b} looked for the {obj} under every tree.",
        f"It was {weather}, so {a} stayed in the {place} and read a book.",
    ]
    endings = [
        f"In the end, {a} and {b} were {feel2} friends.",
        f"{a} smiled and went home. The {obj} was safe.",
        f"From that day on, {a} always took care of the {obj}.",
        f"They laughed together, and the {animal} felt {feel2}.",
    ]
    parts = [rng.choice(openings)] + rng.sample(middles, rng.randint(1, 3)) + [rng.choice(endings)]
    return " ".join(parts)


def held_out_sums(seed: int, count: int) -> list[tuple[int, int]]:
    """The sums kept out of training (test prompts), drawn from their own stream."""
    rng = random.Random(seed * 7919 + 17)
    seen, out = set(), []
    while len(out) < count:
        p = (rng.randrange(1000), rng.randrange(1000))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def operand(rng: random.Random) -> int:
    """A number below 1000 whose digit count is drawn first: uniform values would make 1- and 2-digit
    operands rare (10%), and the model would never learn to align place values of unequal lengths."""
    digits = rng.choices((1, 2, 3), weights=(0.15, 0.35, 0.5))[0]
    return rng.randrange(0 if digits == 1 else 10 ** (digits - 1), 10 ** digits)


def sums_block(rng: random.Random, excluded: set, n: int) -> str:
    lines = []
    while len(lines) < n:
        a, b = operand(rng), operand(rng)
        if (a, b) in excluded:
            continue
        lines.append(f"{a}+{b}={a + b}")
    return "\n".join(lines)


def documents(seed: int, excluded: set, sum_fraction: float = 0.5):
    """An endless stream of documents: stories and blocks of sums (`sum_fraction` of them)."""
    rng = random.Random(seed)
    while True:
        if rng.random() >= sum_fraction:
            yield story(rng)
        else:
            yield sums_block(rng, excluded, rng.randint(4, 12))
