# Shared by ./test and ./lab (sourced, not executed).
# - strata_ensure_packages [pkg...]: installs the Debian packages the build needs (or the ones
#   given), once.
# - strata_configure <preset> [cmake args...]: configures a preset when its build dir is missing or stale.
unset CDPATH # a cd into a relative path would echo it, or go elsewhere

STRATA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." >/dev/null && pwd)"
STRATA_JOBS="${STRATA_JOBS:-2}"
STRATA_DEB_PACKAGES=(cmake g++ make libgtest-dev libbenchmark-dev libcli11-dev clang libboost-dev
    libmimalloc-dev libjemalloc-dev libgoogle-perftools-dev libtbb-dev libplf-colony-dev libzstd-dev python3 libclang-rt-14-dev sqlite3
    nlohmann-json3-dev git pkg-config
    berkeley-abc z3 ruby lua5.4 imagemagick # real programs the tests run under the malloc (tests/programs)
    libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers) # the Vulkan test: loader, lavapipe, validation

strata_log() { printf 'strata: %s\n' "$*" >&2; }

strata_ensure_packages() {
    if [[ "${STRATA_SKIP_APT:-0}" == 1 ]]; then return 0; fi
    local -a wanted=("${STRATA_DEB_PACKAGES[@]}")
    if (($# > 0)); then wanted=("$@"); fi
    if ! command -v dpkg-query >/dev/null 2>&1; then
        strata_log "not a Debian system (no dpkg-query); assuming ${wanted[*]} are installed"
        return 0
    fi
    local missing=() pkg status
    for pkg in "${wanted[@]}"; do
        status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
        [[ "$status" == *" installed" ]] || missing+=("$pkg")
    done
    if ((${#missing[@]} == 0)); then return 0; fi

    strata_log "installing missing Debian packages: ${missing[*]}"
    local -a sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            strata_log "not root and no sudo; run as root:"
            printf '  apt-get update && apt-get install -y --no-install-recommends %s\n' "${missing[*]}" >&2
            exit 1
        fi
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# strata_configure <preset> [extra cmake -D args...]
# Configures when the build dir has no cache yet, when CMakePresets.json changed since, or when extra
# arguments are given (cmake keeps a -D value in the cache, so repeating one is cheap).
strata_configure() {
    local preset="$1"
    shift
    local cache="$STRATA_ROOT/build/$preset/CMakeCache.txt"
    # A failed configure leaves a cache but no build system: configure again then.
    local generated="$STRATA_ROOT/build/$preset/CMakeFiles/Makefile.cmake"
    if [[ ! -f "$cache" || ! -f "$generated" || "$STRATA_ROOT/CMakePresets.json" -nt "$cache" || $# -gt 0 ]]; then
        (cd "$STRATA_ROOT" && cmake --preset "$preset" "$@")
    fi
}

# strata_build <preset> [cmake --build args...]
strata_build() {
    local preset="$1"
    shift
    (cd "$STRATA_ROOT" && cmake --build --preset "$preset" -j"$STRATA_JOBS" "$@")
}
