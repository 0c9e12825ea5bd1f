#!/usr/bin/env python3
"""Writes a deterministic bit-vector puzzle for z3 to stdout (tests/programs, bench/programs.sh).

    python3 smt_puzzle.py [SCALE]      (default 1: 14 constraints, about a second)

Eight 32-bit unknowns under random inequalities between products, sums and xors, and one product
pinned to a constant; z3 bit-blasts them into a SAT problem of ~100,000 variables, so its allocator
sees clauses, watch lists and term nodes of many sizes made and dropped. Each SCALE step adds six
constraints (scale 2: 20, a few times the work). The query ends with the model's values: z3's search
does not depend on addresses, so every malloc must print the same values and statistics.
"""
import random
import sys


def main() -> int:
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rnd = random.Random(7)
    names = "abcdefgh"
    out = sys.stdout
    out.write("(set-logic QF_BV)\n")
    for v in names:
        out.write(f"(declare-fun {v} () (_ BitVec 32))\n")
    for _ in range(8 + 6 * scale):
        x, y, z = rnd.sample(names, 3)
        k, m = rnd.randrange(1 << 32), rnd.randrange(1 << 32)
        out.write(f"(assert (bvult (bvmul {x} (bvadd {y} #x{k:08x})) (bvxor {z} #x{m:08x})))\n")
    out.write("(assert (= (bvmul a b) #x0badf00d))\n")
    out.write("(check-sat)\n")
    out.write(f"(get-value ({' '.join(names)}))\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
