"""The generated source tree of the workspace benchmark (bench/workspace.py): the same tree for
the same size on every machine (a seeded generator, no downloads).

It looks like a large monorepo: a `.git` directory (`git init`, plus object directories), a
`.gitignore` that leaves out `target/`, `node_modules/` and `*.log`, crates of Rust sources
with tests, docs, TypeScript and Python beside them, a directory of 1,000 entries, a 5 MB
text file, and ignored build output. `served` files are what a walk that honours
`.gitignore` sees; the ignored and `.git` files come on top.

The file contents are lines drawn from a fixed pool of source-like lines, with rare lines
the searches look for mixed in at fixed rates, so the number of matches grows with the tree.
"""

from __future__ import annotations

import os
import random
import subprocess

WIDE_ENTRIES = 1_000
"""Entries of `wide/`, the directory the listing case lists."""

BIG_FILE = "big/five-mb.txt"
BIG_BYTES = 5 * 1024 * 1024
BIG_LINE_BYTES = 100
"""The 5 MB file is made of lines of this many bytes (the newline included)."""

# What the searches look for, and how often a line is one of them.
LITERAL = "needle_literal"
RARE_LINES = [
    ("    let value = needle_literal(&items);", 1 / 4000),
    ("    // Needle_Literal: mixed case, found by the case-insensitive search", 1 / 8000),
    ("fn needle_handler(request: &Request) -> Response {", 1 / 6000),
    ("pub fn needle_parse(input: &str) -> Result<Token, Error> {", 1 / 6000),
]
TEST_SUFFIX = "_test.rs"
"""The name search finds `*_test.rs`; one file in this many is one."""
TEST_EVERY = 97

WORDS = ("let mut value items len self return Ok Err Some None match if else for in while loop fn pub "
         "struct enum impl trait use mod crate super where async await move ref as type const static "
         "String Vec Option Result Box Arc Mutex HashMap u8 u32 u64 usize i64 f64 bool str "
         "request response error index count buffer reader writer config state handle parse build").split()


def line_pool(rng: random.Random, n: int = 4096) -> list[str]:
    pool = []
    for _ in range(n):
        indent = "    " * rng.choice([0, 1, 1, 2, 2, 3])
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 12)))
        pool.append(indent + rng.choice(["{}", "{};", "{} {{", "// {}", "{},", "}}"]).format(words))
    return pool


def file_text(rng: random.Random, pool: list[str]) -> str:
    lines = rng.choices(pool, k=rng.randrange(4, 90))
    for i in range(len(lines)):
        draw = rng.random()
        for text, rate in RARE_LINES:
            if draw < rate:
                lines[i] = text
                break
            draw -= rate
    return "\n".join(lines) + "\n"


def generate(root: str, served: int, ignored: int, seed: int = 18) -> dict:
    """Writes the tree under `root` (which must not exist): `served` files a gitignore-aware
    walk sees, and about `ignored` more under `target/`, `node_modules/` and `.git/`. Returns
    what was made."""
    rng = random.Random(seed)
    pool = line_pool(rng)
    os.makedirs(root)

    def put(rel: str, text: str | bytes) -> None:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode())

    put(".gitignore", "target/\nnode_modules/\n*.log\n")
    put("README.md", "# A generated monorepo\n")
    put(BIG_FILE, "".join(f"{n:>9} " + "x" * (BIG_LINE_BYTES - 11) + "\n" for n in range(BIG_BYTES // BIG_LINE_BYTES)))
    for n in range(WIDE_ENTRIES):
        put(f"wide/entry-{n:04}.txt", f"entry {n}\n")
    made = 2 + WIDE_ENTRIES  # README.md, the big file (.gitignore is hidden: not served)
    # Crates of modules of about 20 files, the sizes of a real source tree.
    extensions = [".rs"] * 14 + [".md", ".toml", ".ts", ".py", ".json", ".txt"]
    crate = 0
    while made < served:
        for module in range(rng.randrange(3, 12)):
            for k in range(rng.randrange(8, 32)):
                if made >= served:
                    break
                name = f"f{k:03}" + (TEST_SUFFIX if made % TEST_EVERY == 0 else rng.choice(extensions))
                put(f"crates/c{crate:04}/src/m{module:02}/{name}", file_text(rng, pool))
                made += 1
        crate += 1
    # What a gitignore-aware walk leaves out: build output, dependencies, git's own files.
    parts = max(ignored // 3, 1)
    for n in range(parts):
        put(f"target/debug/deps/d{n // 50:04}/o{n % 50:02}.rmeta", "needle_literal in build output\n")
        put(f"node_modules/p{n // 50:04}/lib/i{n % 50:02}.js", "needle_literal in a dependency\n")
        put(f".git/objects/{n % 256:02x}/{n:038x}", b"x\x01needle_literal")
    put("target/build.log", "")
    subprocess.run(["git", "init", "--quiet", root], check=True)
    return {"served": served, "ignored": 3 * parts + 1, "crates": crate}


if __name__ == "__main__":
    import sys

    print(generate(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
