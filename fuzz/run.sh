#!/usr/bin/env bash
# fuzz/run.sh: builds the libFuzzer targets (clang, ASan+UBSan, STRATA_CHECKS=2) in build/fuzz and
# runs each for a bounded time. Exits non-zero when a target finds a crash (or fails to build).
#
#   bash fuzz/run.sh                       # every target, STRATA_FUZZ_SECONDS (default 30) each,
#                                          # STRATA_FUZZ_JOBS (default 2) at a time
#   STRATA_FUZZ_SECONDS=300 bash fuzz/run.sh tlsf      # one target, longer
#
# Corpora: fuzz/corpus/<target>/ (committed seeds) is read; new inputs go to build/fuzz/corpus/.
# Crash inputs are written to build/fuzz/crashes/ (reproduce: build/fuzz/fuzz/strata_fuzz_X FILE).
set -euo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." >/dev/null && pwd)"
build="${STRATA_FUZZ_BUILD:-$root/build/fuzz}"
seconds="${STRATA_FUZZ_SECONDS:-30}"
jobs="${STRATA_FUZZ_JOBS:-2}"
cxx="${STRATA_FUZZ_CXX:-clang++}"
command -v "$cxx" >/dev/null || { echo "fuzz/run.sh: $cxx not found" >&2; exit 2; }

cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug \
    -DSTRATA_BUILD_FUZZ=ON -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_LAB=OFF \
    -DSTRATA_INSTALL=OFF -DSTRATA_SANITIZE=address -DSTRATA_CHECKS=2 -DSTRATA_WERROR=ON >/dev/null
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    for f in "$root"/fuzz/*_fuzz.cpp; do
        n="$(basename "$f" _fuzz.cpp)"
        targets+=("$n")
    done
    # This build holds only the library and the fuzz targets: one goal, so make builds them in
    # parallel (several --target goals are built one after another).
    cmake --build "$build" -j "$jobs"
else
    cmake --build "$build" -j "$jobs" --target "${targets[@]/#/strata_fuzz_}"
fi

# fuzz_one <target>: runs one target for $seconds; its report goes to $build/<target>.out.
fuzz_one() {
    local t="$1" bin="$build/fuzz/strata_fuzz_$1" corpus="$build/corpus/$1" seeds=()
    mkdir -p "$corpus"
    [[ -d "$root/fuzz/corpus/$t" ]] && seeds+=("$root/fuzz/corpus/$t")
    echo "== fuzz $t: ${seconds}s"
    if ! ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=1" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        "$bin" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/crashes/$t-" "$corpus" "${seeds[@]}" 2>"$build/$t.log"; then
        echo "fuzz/run.sh: $t FAILED; log: $build/$t.log; crash inputs: $build/crashes/"
        tail -40 "$build/$t.log"
        return 1
    fi
    grep -E "stat::number_of_executed_units|cov:" "$build/$t.log" | tail -2
}

# The targets run $jobs at a time (each is one process on one core); reports print in order.
mkdir -p "$build/crashes"
status=0
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
    batch=("${targets[@]:i:jobs}")
    pids=()
    for t in "${batch[@]}"; do
        fuzz_one "$t" >"$build/$t.out" 2>&1 &
        pids+=($!)
    done
    for k in "${!batch[@]}"; do
        wait "${pids[$k]}" || status=1
        cat "$build/${batch[$k]}.out"
    done
done
exit $status
