#!/usr/bin/env bash
# tests/programs/run-programs.sh: the slower real-program checks, too long for CI. Each program runs
# once on the C library's malloc and once with LD_PRELOAD=<library>; a crash, a hang, a non-zero
# exit or a difference in what is compared fails the step.
#
#   bash tests/programs/run-programs.sh [LIBRARY]
#
# LIBRARY: the malloc to preload (default $STRATA_MALLOC, else the first libstrata_malloc.so* under
# build/release). Environment:
#   STEPS="workloads pytest openttd-ticks openttd-server"   which steps (default all)
#   SCALE=4            STRATA_SCALE of the `workloads` step (the CI test runs scale 1)
#   PYTEST_PYTHON=...  interpreter whose own test suite `pytest` runs (default: Debian's python3 when
#                      its test suite is installed, else pyenv's CPython 3.11 when present)
#   PYTESTS="..."      the regrtest modules to run (default: a 20-module allocation-heavy subset)
#   OTTD_TICKS=60000   game ticks of the `openttd-ticks` step (~2 game years)
#   OTTD_SECONDS=20    wall seconds of the `openttd-server` step
# Steps:
#   workloads       the CI workloads (tests/programs/gen/workload.sh: sqlite3, python3 with
#                   PYTHONMALLOC=malloc, git, g++ -O2 of a generated file, Berkeley ABC, z3, a bash
#                   script of short processes, a Ruby script, a Lua script) at SCALE: byte-identical
#                   stdout. At SCALE=4 the g++ step compiles a 32-component file (~5x CI's).
#   pytest          CPython's own regression tests (`python -m test`), PYTHONMALLOC=malloc so every
#                   object goes through the preloaded malloc: both runs must pass, and the summary
#                   lines (which tests ran, OK/skipped counts) must be identical. Debian ships the
#                   suite as libpython3.11-testsuite (not installed here, and not added to CI).
#   openttd-ticks   an OpenTTD 13 game (Debian openttd + openttd-opengfx) from seed 1, headless (null
#                   video, sound, music drivers) for OTTD_TICKS ticks; threaded_saves off so the
#                   monthly autosaves are deterministic: every autosave must be byte-identical.
#   openttd-server  `openttd -D` (dedicated server) from seed 1 for OTTD_SECONDS, then SIGINT: a
#                   clean exit and an identical console log (map generation, network start/stop).
# Ends with "N passed, M failed, K skipped"; exits 1 when a step failed.
set -uo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" >/dev/null && pwd)"
root="$(cd "$here/../.." >/dev/null && pwd)"
lib="${1:-${STRATA_MALLOC:-$(find "$root/build/release" -name 'libstrata_malloc.so*' -type f 2>/dev/null | sort | head -n 1)}}"
[[ -n "$lib" && -e "$lib" ]] || { echo "run-programs.sh: no preload library (pass one, or build strata_malloc)" >&2; exit 2; }
lib="$(realpath "$lib")" # the programs run in their own directories
work="$(mktemp -d -t strata-run-programs.XXXXXX)"
keep=0
trap '[[ $keep == 1 ]] && echo "kept for inspection: $work" || rm -rf "$work"' EXIT
passed=0 failed=0 skipped=0
pass() { echo "PASS  $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1: $2"; failed=$((failed + 1)); keep=1; }
skip() { echo "SKIP  $1: $2"; skipped=$((skipped + 1)); }
echo "preloading $lib; work in $work"

step_workloads() {
    local name
    for name in sqlite3 python3 git gxx abc z3 shell ruby lua convert; do
        local dir="$work/$name"
        case "$name" in # the ones that Debian's base image lacks most often
        abc) command -v "${ABC:-berkeley-abc}" >/dev/null || { skip abc "berkeley-abc is not installed"; continue; } ;;
        z3) command -v "${Z3:-z3}" >/dev/null || { skip z3 "z3 is not installed"; continue; } ;;
        ruby) command -v "${RUBY:-ruby}" >/dev/null || { skip ruby "ruby is not installed"; continue; } ;;
        lua) command -v "${LUA:-lua5.4}" >/dev/null || { skip lua "lua5.4 is not installed"; continue; } ;;
        convert) command -v "${CONVERT:-/usr/bin/convert-im6.q16}" >/dev/null || { skip convert "imagemagick is not installed"; continue; } ;;
        esac
        STRATA_SCALE="${SCALE:-4}" bash "$here/gen/workload.sh" "$name" prepare "$dir" || { fail "$name" "prepare failed"; continue; }
        local t0=$SECONDS
        if ! STRATA_SCALE="${SCALE:-4}" STRATA_PYTHONMALLOC=malloc timeout 1200 \
            bash "$here/gen/workload.sh" "$name" run "$dir" >"$dir.glibc.out" 2>"$dir.glibc.err"; then
            fail "$name (scale ${SCALE:-4})" "failed on glibc, see $dir.glibc.err"
            continue
        fi
        if ! STRATA_SCALE="${SCALE:-4}" STRATA_PYTHONMALLOC=malloc STRATA_PRELOAD="$lib" timeout 1200 \
            bash "$here/gen/workload.sh" "$name" run "$dir" >"$dir.preload.out" 2>"$dir.preload.err"; then
            fail "$name (scale ${SCALE:-4})" "failed under LD_PRELOAD, see $dir.preload.err"
            continue
        fi
        if cmp -s "$dir.glibc.out" "$dir.preload.out"; then
            pass "$name (scale ${SCALE:-4}, $(wc -c <"$dir.glibc.out") bytes identical, $((SECONDS - t0)) s)"
        else
            fail "$name (scale ${SCALE:-4})" "outputs differ: $(cmp "$dir.glibc.out" "$dir.preload.out" | head -1)"
        fi
    done
}

step_pytest() {
    local py="${PYTEST_PYTHON:-}"
    if [[ -z "$py" ]]; then
        if [[ -d /usr/lib/python3.11/test/test_json ]]; then
            py=/usr/bin/python3
        elif [[ -x /root/.pyenv/versions/3.11.7/bin/python3.11 ]]; then
            py=/root/.pyenv/versions/3.11.7/bin/python3.11 # not Debian's, but CPython all the same
        else
            skip pytest "no CPython test suite (apt-get install libpython3.11-testsuite)"
            return
        fi
    fi
    local tests="${PYTESTS:-test_json test_re test_dict test_list test_set test_bytes test_unicode test_ast \
        test_collections test_deque test_heapq test_sort test_itertools test_pickle test_struct test_zlib \
        test_hashlib test_sqlite3 test_string test_bisect}"
    local mode
    for mode in glibc preload; do
        local pre=""
        [[ $mode == preload ]] && pre="$lib"
        # shellcheck disable=SC2086 # the test list is a word list
        (cd "$work" && HOME="$work" LC_ALL=C PYTHONMALLOC=malloc LD_PRELOAD="$pre" timeout 1800 \
            "$py" -m test $tests) >"$work/pytest.$mode.log" 2>&1
        local rc=$?
        [[ $rc == 0 ]] || { fail "pytest ($py)" "exit $rc on $mode, see $work/pytest.$mode.log"; return; }
        grep -E '^(All )?[0-9]+ tests? (OK|skipped|failed)|^Tests result:|^Total tests:|^[0-9]+ tests? skipped:|^    test_' \
            "$work/pytest.$mode.log" >"$work/pytest.$mode.summary"
    done
    if cmp -s "$work/pytest.glibc.summary" "$work/pytest.preload.summary"; then
        pass "pytest ($py: $(grep -m1 -E 'tests? OK' "$work/pytest.glibc.summary"))"
    else
        fail "pytest ($py)" "summaries differ: diff $work/pytest.glibc.summary $work/pytest.preload.summary"
    fi
}

openttd_bin() {
    command -v openttd 2>/dev/null || { [[ -x /usr/games/openttd ]] && echo /usr/games/openttd; }
}

step_openttd_ticks() {
    local ottd
    ottd="$(openttd_bin)" || { skip openttd-ticks "openttd not installed"; return; }
    local mode
    for mode in glibc preload; do
        local home="$work/ottd-ticks-$mode" pre=""
        [[ $mode == preload ]] && pre="$lib"
        mkdir -p "$home"
        # A saving thread races the game loop (which ticks on while it writes), so saves are made
        # on the game thread: then each monthly autosave is a pure function of seed and tick.
        printf '[gui]\nthreaded_saves = false\n' >"$home/openttd.cfg"
        (cd "$home" && HOME="$home" LD_PRELOAD="$pre" timeout 1200 "$ottd" -x -c "$home/openttd.cfg" -g -G 1 \
            -snull -mnull -vnull:ticks="${OTTD_TICKS:-60000}") >"$home.log" 2>&1
        local rc=$?
        [[ $rc == 0 ]] || { fail openttd-ticks "exit $rc on $mode, see $home.log"; return; }
    done
    local a="$work/ottd-ticks-glibc/save/autosave" b="$work/ottd-ticks-preload/save/autosave"
    if [[ -z "$(ls "$a" 2>/dev/null)" ]]; then fail openttd-ticks "no autosave written"; return; fi
    if diff -r -q "$a" "$b" >/dev/null; then
        pass "openttd-ticks (${OTTD_TICKS:-60000} ticks, $(ls "$a" | wc -l) autosaves identical)"
    else
        fail openttd-ticks "autosaves differ: diff -r $a $b"
    fi
}

step_openttd_server() {
    local ottd
    ottd="$(openttd_bin)" || { skip openttd-server "openttd not installed"; return; }
    local mode
    for mode in glibc preload; do
        local home="$work/ottd-server-$mode" pre=""
        [[ $mode == preload ]] && pre="$lib"
        mkdir -p "$home"
        # SIGINT makes the server shut its network down and exit cleanly (status 0), saving nothing.
        (cd "$home" && HOME="$home" LD_PRELOAD="$pre" timeout --preserve-status -s INT "${OTTD_SECONDS:-20}" \
            "$ottd" -D 127.0.0.1:39795 -g -G 1 -x -c "$home/openttd.cfg") >"$home.log" 2>&1
        local rc=$?
        [[ $rc == 0 ]] || { fail openttd-server "exit $rc on $mode, see $home.log"; return; }
    done
    if cmp -s "$work/ottd-server-glibc.log" "$work/ottd-server-preload.log"; then
        pass "openttd-server (${OTTD_SECONDS:-20} s, $(wc -l <"$work/ottd-server-glibc.log") log lines identical)"
    else
        fail openttd-server "logs differ: diff $work/ottd-server-glibc.log $work/ottd-server-preload.log"
    fi
}

for step in ${STEPS:-workloads pytest openttd-ticks openttd-server}; do
    case "$step" in
    workloads) step_workloads ;;
    pytest) step_pytest ;;
    openttd-ticks) step_openttd_ticks ;;
    openttd-server) step_openttd_server ;;
    *) fail "$step" "unknown step (workloads pytest openttd-ticks openttd-server)" ;;
    esac
done
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed == 0 ]]
