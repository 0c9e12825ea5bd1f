#!/usr/bin/env python3
"""Markdown tables from strata-churn --jsonl output: ns/pair with ratios to glibc, and tails.

    python3 bench/churn/ratios.py FILE.jsonl [FILE.jsonl ...] [--versus NAME]

One file: one run, as strata-churn measured it. Several files (one per round of
`STRATA_PEERS_ROUNDS=N bash bench/churn/peers.sh`): every figure is the median over the rounds, the
ratios are medians of the per-round ratios (each round against its own glibc), and a range column
shows the slowest and fastest round. On this VM a whole process now and then runs ~1.5x slower,
so one round can flip a close verdict; the median over rounds is the figure to quote.

--versus NAME adds a column: NAME's ns/pair over each contender's (median of the per-round
ratios, > 1 means faster than NAME), and the number of rounds in which the contender was faster.
"""
import argparse
import json
import statistics
import sys


def load(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def ratio_text(r):
    if r >= 0.995 and r < 1.005:
        return "1.00x"
    return f"{r:.2f}x faster" if r > 1 else f"{1 / r:.2f}x slower"


def single(rows):
    workloads = sorted({r["workload"] for r in rows})
    for w in workloads:
        rs = [r for r in rows if r["workload"] == w]
        base = next((r["ns_per_pair"] for r in rs if r["contender"] == "glibc"), None)
        print(f"\n### {w}: ns per free+allocate pair (median), ratio to glibc, per-call tails (ns, filtered)\n")
        print("| contender | ns/pair | vs glibc | alloc p99 | alloc p99.99 | free p99.99 | raw alloc p99.99 |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in sorted(rs, key=lambda r: r["ns_per_pair"]):
            ratio = ratio_text(base / r["ns_per_pair"]) if base else "-"
            if "alloc_filtered" not in r:  # --latency-runs 0: no per-call timings
                print(f"| {r['contender']} | {r['ns_per_pair']:.1f} | {ratio} | - | - | - | - |")
                continue
            af, ff, ar = r["alloc_filtered"], r["free_filtered"], r["alloc_raw"]
            print(f"| {r['contender']} | {r['ns_per_pair']:.1f} | {ratio} | {af['p99']:.0f} | {af['p99.99']:.0f} "
                  f"| {ff['p99.99']:.0f} | {ar['p99.99']:.0f} |")


def rounds(runs, versus):
    n = len(runs)
    # by_round[i][(workload, contender)] = row
    by_round = [{(r["workload"], r["contender"]): r for r in rows} for rows in runs]
    workloads = sorted({w for rd in by_round for (w, _) in rd})
    for w in workloads:
        names = sorted({c for rd in by_round for (wl, c) in rd if wl == w})
        print(f"\n### {w}: medians over {n} rounds (ns per free+allocate pair; ratios are medians of per-round "
              f"ratios; tails in ns, filtered)\n")
        head = "| contender | ns/pair | range | vs glibc |"
        rule = "| --- | ---: | ---: | ---: |"
        if versus:
            head += f" vs {versus} | faster than {versus} |"
            rule += " ---: | ---: |"
        head += " alloc p99.99 | free p99.99 |"
        rule += " ---: | ---: |"
        print(head)
        print(rule)
        table = []
        for c in names:
            ns, to_glibc, to_versus, wins, alloc, free = [], [], [], 0, [], []
            for rd in by_round:
                r = rd.get((w, c))
                if r is None:
                    continue
                ns.append(r["ns_per_pair"])
                g = rd.get((w, "glibc"))
                if g is not None:
                    to_glibc.append(g["ns_per_pair"] / r["ns_per_pair"])
                v = rd.get((w, versus)) if versus else None
                if v is not None:
                    to_versus.append(v["ns_per_pair"] / r["ns_per_pair"])
                    wins += r["ns_per_pair"] < v["ns_per_pair"]
                if "alloc_filtered" in r:
                    alloc.append(r["alloc_filtered"]["p99.99"])
                    free.append(r["free_filtered"]["p99.99"])
            table.append((statistics.median(ns), c, ns, to_glibc, to_versus, wins, alloc, free))
        for med, c, ns, to_glibc, to_versus, wins, alloc, free in sorted(table):
            line = f"| {c} | {med:.1f} | {min(ns):.1f}-{max(ns):.1f} | "
            line += (ratio_text(statistics.median(to_glibc)) if to_glibc else "-") + " |"
            if versus:
                if to_versus:
                    line += f" {ratio_text(statistics.median(to_versus))} | {wins}/{len(to_versus)} |"
                else:
                    line += " - | - |"
            tail = lambda xs: f"{statistics.median(xs):.0f} ({min(xs):.0f}-{max(xs):.0f})" if xs else "-"
            line += f" {tail(alloc)} | {tail(free)} |"
            print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="strata-churn --jsonl files, one per round")
    ap.add_argument("--versus", help="a contender to compare every row with (e.g. mimalloc)")
    args = ap.parse_args()
    runs = [load(f) for f in args.files]
    if len(runs) == 1 and not args.versus:
        single(runs[0])
    else:
        rounds(runs, args.versus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
