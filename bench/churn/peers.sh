#!/usr/bin/env bash
# bench/churn/peers.sh: the W1/W2/W3 churn race, every Debian malloc against strata's contenders,
# in one run (same binary, same seeded sequences).
#
#   bash bench/churn/peers.sh [BUILD_DIR] [strata-churn args...]      (default BUILD_DIR: build/release)
#
# The mallocs are swapped in with LD_PRELOAD (each replaces malloc/free for the whole process, so
# each gets its own process); every other contender runs in one more process. Output: the tables
# strata-churn prints, then a ratio table (ns/pair relative to glibc) from bench/churn/ratios.py.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build/release}"
shift || true
bin="$build/bench/churn/strata-churn"
[[ -x "$bin" ]] || { echo "peers.sh: $bin not built (cmake --build --preset release --target strata-churn)" >&2; exit 2; }
lib=/usr/lib/x86_64-linux-gnu
out="$(mktemp -t strata-churn.XXXXXX.jsonl)"
trap 'rm -f "$out"' EXIT

declare -A peers=(
    [mimalloc]="$lib/libmimalloc.so.2"
    [jemalloc]="$lib/libjemalloc.so.2"
    [tcmalloc]="$lib/libtcmalloc_minimal.so.4"
    [tbbmalloc]="$lib/libtbbmalloc_proxy.so.2"
)
echo "== glibc"
"$bin" --only malloc --label glibc --jsonl "$out" "$@"
for name in mimalloc jemalloc tcmalloc tbbmalloc; do
    so="${peers[$name]}"
    if [[ ! -e "$so" ]]; then echo "== $name: $so missing, skipped"; continue; fi
    echo "== $name ($so)"
    LD_PRELOAD="$so" "$bin" --only malloc --label "$name" --jsonl "$out" "$@"
done
others="$("$bin" --list | awk '$1 != "malloc" {print $1}' | paste -sd, -)"
echo "== in-process contenders: $others"
"$bin" --only "$others" --jsonl "$out" "$@"
echo
python3 "$root/bench/churn/ratios.py" "$out"
