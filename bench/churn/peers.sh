#!/usr/bin/env bash
# bench/churn/peers.sh: the W1/W2/W3 churn race, every Debian malloc against strata's contenders,
# in one run (same binary, same seeded sequences).
#
#   bash bench/churn/peers.sh [BUILD_DIR] [strata-churn args...]      (default BUILD_DIR: build/release)
#   STRATA_PEERS_ROUNDS=5 bash bench/churn/peers.sh ...               (5 rounds, medians over them)
#
# The mallocs are swapped in with LD_PRELOAD (each replaces malloc/free for the whole process, so
# each gets its own process); every other contender runs in one more process. Output: the tables
# strata-churn prints, then a ratio table (ns/pair relative to glibc) from bench/churn/ratios.py.
#
# With STRATA_PEERS_ROUNDS=N the whole sequence of processes runs N times, interleaved, and the
# final table gives each contender's median over the rounds, its range, its median ratio to glibc
# and to STRATA_PEERS_VERSUS (default mimalloc) with the rounds it won. This VM runs a whole process
# ~1.5x slower now and then, so a close verdict from one round is a coin toss; quote the medians.
set -euo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." >/dev/null && pwd)"
source "$root/bench/preload.sh"
build="${1:-$root/build/release}"
shift || true
bin="$build/bench/churn/strata-churn"
[[ -x "$bin" ]] || { echo "peers.sh: $bin not built (cmake --build --preset release --target strata-churn)" >&2; exit 2; }
lib=/usr/lib/x86_64-linux-gnu
rounds="${STRATA_PEERS_ROUNDS:-1}"
versus="${STRATA_PEERS_VERSUS:-mimalloc}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "peers.sh: STRATA_PEERS_ROUNDS must be a positive integer" >&2; exit 2; }
outs=()
cleanup() { rm -f "${outs[@]}"; }
trap cleanup EXIT

declare -A peers=(
    [mimalloc]="$lib/libmimalloc.so.2"
    [jemalloc]="$lib/libjemalloc.so.2"
    [tcmalloc]="$lib/libtcmalloc_minimal.so.4"
    [tbbmalloc]="$lib/libtbbmalloc_proxy.so.2"
)
# The in-process mimalloc/jemalloc/tcmalloc contenders (called through their own APIs) would share
# their names with the preloaded rows: the preloaded ones, the process's malloc, are raced here.
others="$("$bin" --list | awk '$1 != "malloc" && $1 != "mimalloc" && $1 != "jemalloc" && $1 != "tcmalloc" {print $1}' | paste -sd, -)"
for ((round = 1; round <= rounds; ++round)); do
    out="$(mktemp -t strata-churn.XXXXXX.jsonl)"
    outs+=("$out")
    ((rounds > 1)) && echo "==== round $round of $rounds"
    echo "== glibc"
    "$bin" --only malloc --label glibc --jsonl "$out" "$@"
    for name in mimalloc jemalloc tcmalloc tbbmalloc; do
        so="${peers[$name]}"
        if [[ ! -e "$so" ]]; then echo "== $name: $so missing, skipped"; continue; fi
        if ! strata_replaces_malloc "$so"; then echo "== $name: $so does not replace malloc under LD_PRELOAD, skipped"; continue; fi
        echo "== $name ($so)"
        LD_PRELOAD="$so" "$bin" --only malloc --label "$name" --jsonl "$out" "$@"
    done
    echo "== in-process contenders: $others"
    "$bin" --only "$others" --jsonl "$out" "$@"
done
echo
if ((rounds > 1)); then
    python3 "$root/bench/churn/ratios.py" --versus "$versus" "${outs[@]}"
else
    python3 "$root/bench/churn/ratios.py" "${outs[@]}"
fi
