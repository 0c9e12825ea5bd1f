#!/usr/bin/env python3
"""Markdown tables from strata-mt --jsonl output (bench/mt/peers.sh): per workload, ns per operation
with ratios to mimalloc and glibc, page faults per million operations, peak RSS with its ratio to
mimalloc.

    python3 bench/mt/ratios.py FILE.jsonl
"""
import json
import sys


def ratio(value, base):
    return f"{value / base:.2f}x" if base else "-"


def main() -> int:
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    for w in workloads:
        rs = [r for r in rows if r["workload"] == w]
        by = {r["malloc"]: r for r in rs}
        mi, gl = by.get("mimalloc"), by.get("glibc")
        t = rs[0]
        print(f"\n### {w}: {t['threads']} threads x {t['ops_per_thread']:,} ops, median of {t['repeats']} "
              f"(ns/op: lower is better; ratios: this / peer)\n")
        print("| malloc | ns/op | vs mimalloc | vs glibc | Mops/s | faults/1M ops | peak RSS MiB | RSS vs mimalloc |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in sorted(rs, key=lambda r: r["ns_per_op"]):
            print(f"| {r['malloc']} | {r['ns_per_op']:.1f} | {ratio(r['ns_per_op'], mi and mi['ns_per_op'])} "
                  f"| {ratio(r['ns_per_op'], gl and gl['ns_per_op'])} | {r['ops_per_s'] / 1e6:.2f} "
                  f"| {r['faults_per_mop']:.1f} | {r['peak_rss_kib'] / 1024:.1f} "
                  f"| {ratio(r['peak_rss_kib'], mi and mi['peak_rss_kib'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
