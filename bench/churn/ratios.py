#!/usr/bin/env python3
"""Markdown tables from strata-churn --jsonl output: ns/pair with ratios to glibc, and tails.

    python3 bench/churn/ratios.py FILE.jsonl
"""
import json
import sys


def main() -> int:
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    workloads = sorted({r["workload"] for r in rows})
    for w in workloads:
        rs = [r for r in rows if r["workload"] == w]
        base = next((r["ns_per_pair"] for r in rs if r["contender"] == "glibc"), None)
        print(f"\n### {w}: ns per free+allocate pair (median), ratio to glibc, per-call tails (ns, filtered)\n")
        print("| contender | ns/pair | vs glibc | alloc p99 | alloc p99.99 | free p99.99 | raw alloc p99.99 |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in sorted(rs, key=lambda r: r["ns_per_pair"]):
            ratio = f"{base / r['ns_per_pair']:.2f}x faster" if base else "-"
            if base and r["ns_per_pair"] == base:
                ratio = "1.00x"
            if base and r["ns_per_pair"] > base:
                ratio = f"{r['ns_per_pair'] / base:.2f}x slower"
            if "alloc_filtered" not in r:  # --latency-runs 0: no per-call timings
                print(f"| {r['contender']} | {r['ns_per_pair']:.1f} | {ratio} | - | - | - | - |")
                continue
            af, ff, ar = r["alloc_filtered"], r["free_filtered"], r["alloc_raw"]
            print(f"| {r['contender']} | {r['ns_per_pair']:.1f} | {ratio} | {af['p99']:.0f} | {af['p99.99']:.0f} "
                  f"| {ff['p99.99']:.0f} | {ar['p99.99']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
