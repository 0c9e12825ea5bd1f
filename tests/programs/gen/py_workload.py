#!/usr/bin/env python3
"""A deterministic allocation-heavy python3 workload (tests/programs, bench/programs.sh).

    python3 py_workload.py [SCALE]      (default 1)

Builds and tears down dicts, lists, strings, bytes, json documents, regular-expression matches,
sorted runs and small objects, and prints digests of the results. Output depends only on SCALE
(no sets are iterated unordered, no addresses or times are printed), so it is byte-identical under
any malloc; run it with PYTHONHASHSEED fixed all the same.
"""
import collections
import hashlib
import json
import random
import re
import sys
import zlib


class Node:
    __slots__ = ("key", "children", "payload")

    def __init__(self, key, payload):
        self.key = key
        self.children = []
        self.payload = payload


def digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def words(rnd, n):
    return ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(1, 14))) for _ in range(n)]


def phase_dicts(rnd, scale):
    vocab = words(rnd, 3000)
    counts = collections.Counter()
    index = {}
    for i in range(60000 * scale):
        w = vocab[rnd.randrange(len(vocab))]
        counts[w] += 1
        index.setdefault(w[:2], []).append(i)
        if i % 7 == 0:
            key = vocab[rnd.randrange(len(vocab))][:2]
            if key in index and len(index[key]) > 40:
                del index[key][: len(index[key]) // 2]
    top = counts.most_common(12)
    print("dicts", len(counts), len(index), top[:5], sum(len(v) for v in index.values()))
    return vocab


def phase_strings(rnd, vocab, scale):
    parts = []
    for i in range(20000 * scale):
        s = "-".join(vocab[rnd.randrange(len(vocab))] for _ in range(rnd.randint(1, 9)))
        parts.append(s.upper() if i % 3 == 0 else s[::-1])
    text = "\n".join(parts)
    pat = re.compile(r"([A-Z]{3,})-([a-z]+)|(\b[a-z]{5}\b)")
    found = pat.findall(text)
    subs = re.sub(r"[aeiou]+", lambda m: str(len(m.group(0))), text[: 200000 * scale])
    print("strings", len(text), len(found), hashlib.md5(subs.encode()).hexdigest())
    print("split", len(text.split("-")), text.count("ab"), text.find("zzz"))


def phase_json(rnd, vocab, scale):
    docs = []
    for i in range(3000 * scale):
        doc = {
            "id": i,
            "name": vocab[rnd.randrange(len(vocab))],
            "tags": [vocab[rnd.randrange(len(vocab))] for _ in range(rnd.randint(0, 12))],
            "pos": [round(rnd.uniform(-1e3, 1e3), 3) for _ in range(3)],
            "meta": {vocab[rnd.randrange(100)]: rnd.randint(0, 10 ** 9) for _ in range(rnd.randint(0, 6))},
        }
        docs.append(doc)
    blob = json.dumps(docs, sort_keys=True)
    back = json.loads(blob)
    packed = zlib.compress(blob.encode(), 6)
    print("json", len(blob), len(packed), digest(back[: 200]), back == docs)


def phase_objects(rnd, scale):
    roots = [Node(i, None) for i in range(64)]
    everything = list(roots)
    for i in range(80000 * scale):
        parent = everything[rnd.randrange(len(everything))]
        child = Node(i, bytes(rnd.randrange(200)) if i % 5 == 0 else str(i) * rnd.randint(1, 6))
        parent.children.append(child)
        everything.append(child)
        if i % 1000 == 999:  # drop a subtree now and then
            victim = roots[rnd.randrange(len(roots))]
            victim.children = victim.children[: len(victim.children) // 2]
    depth_total = 0
    stack = [(r, 0) for r in roots]
    reachable = 0
    while stack:
        node, depth = stack.pop()
        reachable += 1
        depth_total += depth
        stack.extend((c, depth + 1) for c in node.children)
    print("objects", len(everything), reachable, depth_total)


def phase_sort(rnd, scale):
    rows = [(rnd.randint(0, 1000), rnd.random(), "k%06d" % rnd.randint(0, 999999)) for _ in range(100000 * scale)]
    rows.sort(key=lambda r: (r[0], r[2]))
    grouped = collections.defaultdict(list)
    for a, b, c in rows:
        grouped[a % 97].append(c)
    merged = sorted(set(c for cs in grouped.values() for c in cs))
    print("sort", rows[0][0], rows[-1][2], len(grouped), len(merged), merged[len(merged) // 2])


def main() -> int:
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rnd = random.Random(11)
    vocab = phase_dicts(rnd, scale)
    phase_strings(rnd, vocab, scale)
    phase_json(rnd, vocab, scale)
    phase_objects(rnd, scale)
    phase_sort(rnd, scale)
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
