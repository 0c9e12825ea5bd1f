#!/usr/bin/env bash
# bench/device/run.sh: every device-family measurement in one command.
#
#   bash bench/device/run.sh [BUILD_DIR]        (default BUILD_DIR: build/device-bench)
#   STRATA_DEVICE_ROUNDS=7 STRATA_DEVICE_PROCESSES=3 bash bench/device/run.sh
#
# Configures BUILD_DIR when it has no cache (Release, -O2, checks 0, bench on, lab and tests off),
# builds strata-device-bench and strata-churn, then prints:
#   1. strata-device-bench churn, STRATA_DEVICE_PROCESSES times (default 3): W1/W2 free+allocate
#      pairs of offset_heap, tlsf and buddy's offsets API, interleaved in STRATA_DEVICE_ROUNDS rounds
#      (default 7), with the targets' verdicts; quote the median over the processes
#   2. strata-churn's own race of the same contenders (offset_heap through a node side table)
#   3. callgrind instructions per W1/W2 pair (bench/callgrind.py; skipped without valgrind)
#   4. strata-device-bench frag: fragmentation over 1,000,000 mixed allocations in 256 MiB
#   5. strata-device-bench defrag: device_pool defragmentation of three workloads
set -euo pipefail
unset CDPATH
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." >/dev/null && pwd)"
build="${1:-$root/build/device-bench}"
rounds="${STRATA_DEVICE_ROUNDS:-7}"
processes="${STRATA_DEVICE_PROCESSES:-3}"
jobs="${STRATA_DEVICE_JOBS:-2}"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE='-O2 -DNDEBUG' \
        -DSTRATA_CHECKS=0 -DSTRATA_BUILD_BENCH=ON -DSTRATA_BUILD_LAB=OFF -DSTRATA_BUILD_TESTS=OFF \
        -DSTRATA_WERROR=ON >/dev/null
fi
log="$build/device-bench-build.log"
cmake --build "$build" --target strata-device-bench strata-churn -j"$jobs" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
bin="$build/bench/device/strata-device-bench"
churn="$build/bench/churn/strata-churn"

echo "# strata device benchmarks ($(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
for ((p = 1; p <= processes; ++p)); do
    echo "### process $p of $processes"
    "$bin" churn --rounds "$rounds"
    echo
done

echo "## strata-churn: the same contenders through bench/churn (offset_heap keeps its node in the block: see contenders_device.cpp)"
echo
echo '```'
"$churn" --only tlsf,buddy,buddy_offsets,offset_heap --workload w1,w2 --repeats "$rounds" --latency-runs 5
echo '```'
echo

if command -v valgrind >/dev/null; then
    echo "## callgrind: instructions per W1/W2 free+allocate pair"
    echo
    python3 "$root/bench/callgrind.py" "$bin" offset_heap/w1 tlsf/w1 buddy_offsets/w1 offset_heap/w2 tlsf/w2 \
        buddy_offsets/w2 --fills 2 6
    echo
else
    echo "(valgrind not found: no instruction counts)"
    echo
fi

"$bin" frag
echo
"$bin" defrag
