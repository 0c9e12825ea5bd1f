#!/usr/bin/env bash
# tests/programs/gen/workload.sh: the real-program workloads shared by the CI test
# (tests/programs/programs_test.cpp), bench/programs.sh and tests/programs/run-programs.sh.
#
#   bash workload.sh NAME prepare WORKDIR    generate NAME's inputs into WORKDIR (plain, never preloaded)
#   bash workload.sh NAME run WORKDIR        run the program on them; everything it prints goes to stdout
#
# NAME: sqlite3 | python3 | git | gxx | abc | z3 | shell | ruby | lua | convert.  `run` puts $STRATA_PRELOAD (empty: the C library's malloc)
# into LD_PRELOAD of the measured program only, never of this shell or the generators, so a
# difference is the program's; the program's own children (git gc -> pack-objects, g++ -> cc1plus,
# as, ld) inherit it. Environment, each optional:
#   STRATA_PRELOAD   the malloc library to preload into the program (default none)
#   STRATA_SCALE     input size multiplier (default 1; the CI test uses 1)
#   STRATA_PYTHONMALLOC  PYTHONMALLOC for the python3 workload (the CI test: malloc)
#   SQLITE3 PYTHON3 GIT GXX NM ABC Z3 RUBY LUA CONVERT   the programs (default: sqlite3,
#                    /usr/bin/python3, git, g++, nm, berkeley-abc, z3, ruby, lua5.4 from PATH, and
#                    ImageMagick's /usr/bin/convert-im6.q16; python3 is Debian's /usr/bin/python3,
#                    not a pyenv shim)
# The output never contains paths, times or addresses: `run` under any malloc must print the same bytes.
set -euo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
gen="$(cd "$(dirname "${BASH_SOURCE[0]}")" >/dev/null && pwd)"
name="${1:?workload name}"
mode="${2:?prepare or run}"
work="${3:?work directory}"
scale="${STRATA_SCALE:-1}"
preload="${STRATA_PRELOAD:-}"
# The program runs in WORKDIR, so a relative library path would not be found there, and the loader
# only warns about a preload it cannot open: the run would silently measure the C library's malloc.
if [[ -n "$preload" ]]; then
    [[ -r "$preload" ]] || { echo "workload.sh: STRATA_PRELOAD=$preload is not a readable file" >&2; exit 2; }
    preload="$(realpath "$preload")"
fi
SQLITE3="${SQLITE3:-sqlite3}"
PYTHON3="${PYTHON3:-/usr/bin/python3}"
GIT="${GIT:-git}"
GXX="${GXX:-g++}"
NM="${NM:-nm}"
ABC="${ABC:-berkeley-abc}"
Z3="${Z3:-z3}"
RUBY="${RUBY:-ruby}"
LUA="${LUA:-lua5.4}"
CONVERT="${CONVERT:-/usr/bin/convert-im6.q16}"
export LC_ALL=C TZ=UTC PYTHONHASHSEED=0
mkdir -p "$work"
cd "$work"

# The generators run plainly, under Debian's python3.
generate() { "$PYTHON3" -s -B "$gen/$1" "$scale"; }
# The measured program: LD_PRELOAD for it (and its children) only.
under() { LD_PRELOAD="$preload" "$@"; }

case "$name:$mode" in
sqlite3:prepare) generate sqlite_script.py >script.sql ;;
sqlite3:run)
    rm -f db.sqlite db.sqlite-journal
    under "$SQLITE3" -batch -bail db.sqlite <script.sql
    ;;
python3:prepare) cp "$gen/py_workload.py" workload.py ;;
python3:run)
    # STRATA_PYTHONMALLOC=malloc sends every object through malloc instead of pymalloc's arenas
    # (the test does, to put the most calls on the malloc under test; the benchmark does not).
    if [[ -n "${STRATA_PYTHONMALLOC:-}" ]]; then export PYTHONMALLOC="$STRATA_PYTHONMALLOC"; fi
    under "$PYTHON3" -s -B workload.py "$scale"
    ;;
git:prepare) generate git_history.py >history.fi ;;
git:run)
    # No system or user configuration, fixed identities and dates, one pack thread (a threaded delta
    # search may pick other deltas, and then pack sizes differ), no background gc.
    export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 \
        GIT_AUTHOR_NAME="Ada Lovelace" GIT_AUTHOR_EMAIL=ada@example.org \
        GIT_COMMITTER_NAME="Ada Lovelace" GIT_COMMITTER_EMAIL=ada@example.org
    rm -rf repo home && mkdir -p home
    g() { under "$GIT" -C repo -c pack.threads=1 -c gc.auto=0 -c gc.autoDetach=false -c core.pager=cat \
        -c color.ui=false -c advice.detachedHead=false "$@"; }
    under "$GIT" init -q -b main repo
    g fast-import --quiet <history.fi
    g checkout -q main
    # A few porcelain commits on top: the index, the object store and refs written the ordinary way.
    for i in $(seq 1 12); do
        export GIT_AUTHOR_DATE="@$((1700000000 + i * 60)) +0000" GIT_COMMITTER_DATE="@$((1700000000 + i * 60)) +0000"
        printf 'line %d of a working-tree edit\n' $(seq 1 $((i * 7))) >"repo/src/mod$((i % 6))/new$i.txt"
        f=$((i * 5 % 48))
        sed -i "s/^\([a-z_]*\) /\1 edited$i /" "repo/src/mod$((f % 6))/file$(printf %02d $f)".*
        g add -A
        g commit -q -m "working-tree edit $i"
    done
    g log --format='%H %ad %s' --date=iso-strict --stat=100 main
    g log -p --format='%h %s' -n 40 main
    g log --graph --oneline --all
    g diff --stat HEAD~40 HEAD
    g diff HEAD~25 HEAD
    g blame -s src/mod1/file07.c
    g shortlog -s -n --all
    g rev-list --all --objects | sort | "$GIT" hash-object --stdin
    g -c pack.threads=1 gc -q --prune=now
    g count-objects -v | grep -v -e '^size' # sizes depend on the delta search's memory limit, not the malloc
    g fsck --full --no-progress --strict
    g verify-pack -s ".git/objects/pack/$(cd repo/.git/objects/pack && ls *.idx)"
    g archive --format=tar HEAD | cksum
    g grep -c -e edited -e zz HEAD -- 'src/mod2/*'
    ;;
gxx:prepare) generate cpp_source.py >program.cpp ;;
gxx:run)
    rm -f program.s program.o program
    under "$GXX" -std=c++20 -O2 -S -o program.s program.cpp
    cat program.s
    under "$GXX" -c -o program.o program.s
    under "$NM" -C program.o
    under "$GXX" -o program program.o
    under ./program
    ;;
abc:prepare)
    # Berkeley ABC's own generator writes the netlist of an N-bit array multiplier (24 bits at scale
    # 1, 32 at scale 2); the script optimizes it as a logic synthesis flow does (AIG rewriting, SAT
    # sweeping, LUT mapping, don't-care resynthesis with mfs, structural choices, dc2 rewriting),
    # then proves the result equivalent to the input. Single-threaded, mixed sizes: 16-128 B
    # nodes, 64 KiB-2 MiB tables and vectors.
    "$ABC" -s -q "gen -m -N $((16 + 8 * scale)) mult.blif" >/dev/null
    [[ -s mult.blif ]] || { echo "workload.sh: berkeley-abc wrote no mult.blif" >&2; exit 1; }
    rw="balance; rewrite; refactor; balance; rewrite; rewrite -z; balance; refactor -z; rewrite -z; balance"
    echo "read mult.blif; strash; print_stats; $rw; print_stats; fraig; print_stats; if -K 6; print_stats;" \
        "mfs; print_stats; strash; dch; if -K 4; print_stats; strash; dc2; print_stats;" \
        "write_blif out.blif; cec mult.blif" >synth.abc
    ;;
abc:run)
    rm -f out.blif
    # ABC exits 0 whatever its commands did: the equivalence verdict is checked here. Times and the
    # date ABC writes into the netlist's first comment are not the malloc's doing.
    under "$ABC" -s -f synth.abc >abc.out
    if ! grep -q '^Networks are equivalent' abc.out; then
        echo "workload.sh: ABC's cec did not prove the result equivalent" >&2
        exit 1
    fi
    sed -e 's/Time = *[0-9.]* sec//' abc.out
    grep -v '^#' out.blif | cksum
    ;;
shell:prepare)
    # What a configure script or a build's glue does: many short processes on small files. The
    # inputs come from the same tools, run plainly.
    seq 1 $((400 * scale)) | sed 's/^\(.*\)$/\1 item\1 group\1/' >table.txt
    printf '#include <stdio.h>\nint main(void) { return %d; }\n' $(seq 1 20) >conftest.c
    ;;
shell:run)
    # bash and every process it starts run on the malloc under test: each pays the malloc's start-up
    # (loading it, its first allocation) and exit, so start-up cost is most of what differs. stderr
    # is compared too: a tool that crashed in mid-pipeline would say so there (bash reports it).
    n=$((120 * scale))
    under bash -c '
        for i in $(seq 1 "$1"); do
            sed -n "${i}p" table.txt | tr a-z A-Z | cut -d" " -f2-
            grep -c "return $((i % 20 + 1));" conftest.c
            sort -k1,1nr table.txt | head -n $((i % 5 + 1)) | tail -n 1
            awk -v k="$i" "\$1 % k == 0 { s += \$1 } END { print k, s }" table.txt
            expr "$i" \* 7 + 3
        done
        sort -t" " -k3,3 table.txt | head -n 5' shell "$n" 2>&1
    ;;
z3:prepare) generate smt_puzzle.py >puzzle.smt2 ;;
z3:run)
    # The model and the solver's counters; its time and memory figures, and its allocation count
    # (which z3 builds that ask malloc_usable_size take from the malloc), are left out.
    under "$Z3" -st puzzle.smt2 | grep -v -e ':time' -e ':total-time' -e 'memory' -e ':num-allocs'
    ;;
ruby:prepare) cp "$gen/rb_workload.rb" workload.rb ;;
ruby:run)
    # A garbage-collected runtime: malloc'd strings, arrays and hash tables die in bursts at each
    # collection. --disable-gems: no gem paths are searched, so only the script's work is measured.
    under "$RUBY" --disable-gems workload.rb "$scale"
    ;;
lua:prepare) cp "$gen/lua_workload.lua" workload.lua ;;
lua:run)
    # Every Lua object is a malloc block (lua_Alloc over realloc), freed by the incremental collector.
    under "$LUA" workload.lua "$scale"
    ;;
convert:prepare) ;;
convert:run)
    # An image converter: a few pixel buffers of 6-16 MiB (Q16, 1000x750 pixels at scale 1), each
    # allocated after a stretch of work on its threads (OpenMP) and freed soon after the next. The
    # source is a gradient, which is drawn the same way every time (plasma: is random); the pixels
    # go out raw, so the output holds no date or name.
    w=$((1000 * scale)) h=$((750 * scale))
    under "$CONVERT" -size "${w}x$h" gradient:red-blue -swirl 90 -blur 0x2 -resize 130% -rotate 17 -sharpen 0x1 \
        -depth 8 rgb:- | cksum
    ;;
*)
    echo "workload.sh: unknown workload/mode '$name $mode' (names: sqlite3 python3 git gxx abc z3 shell ruby lua convert; modes: prepare run)" >&2
    exit 2
    ;;
esac
