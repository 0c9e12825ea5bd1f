# Sourced by the scripts that race mallocs under LD_PRELOAD (bench/churn/peers.sh, bench/mt/peers.sh,
# bench/realtrace/peers.sh, bench/slab_threads.sh).
#
# strata_replaces_malloc SO: true when preloading SO makes the dynamic linker bind malloc to SO. A
# preload that fails (a truncated or foreign file, a missing dependency) only makes ld.so print one
# line and carry on with glibc, and the run would be filed under the peer's name.
strata_replaces_malloc() {
    local so="$1" log true_bin
    true_bin="$(command -v true)"
    [[ "$true_bin" == /* ]] || true_bin=/bin/true # `true` is a builtin; ld.so needs a program
    log="$(LD_PRELOAD="$so" LD_BIND_NOW=1 LD_DEBUG=bindings "$true_bin" 2>&1)" || return 1
    awk -v to="to $so [" 'index($0, to) && index($0, "normal symbol `malloc'"'"'") { found = 1 }
                          END { exit !found }' <<<"$log"
}
