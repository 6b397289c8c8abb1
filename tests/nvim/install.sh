#!/usr/bin/env bash
# Make Neovim (0.7 or newer: vim.lsp.start_client, vim.wait, vim.json) available, and say
# where it is.
#
#   tests/nvim/install.sh      prints NVIM=<path of nvim> on stdout once it is there
#
# An `nvim` on PATH is used as it is; otherwise Debian's `neovim` package is installed with
# apt-get (needs root).  Exit status: 0 ready; 3 Neovim is missing and cannot be installed
# here (tests/test_second_client.py then skips, with the reason from stderr); 1 anything
# else (apt-get failed, or the Neovim found is too old).
set -euo pipefail

log() { echo "nvim/install.sh: $*" >&2; }

if ! command -v nvim >/dev/null; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        log "nvim is not installed and cannot be installed here (needs root and apt-get: apt-get install neovim)"
        exit 3
    fi
    apt_log="$(mktemp "${TMPDIR:-/tmp}/nvim-apt.XXXXXX.log")"
    log "apt-get install neovim (log: $apt_log)"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim; } >"$apt_log" 2>&1; then
        if ! apt-cache show neovim >/dev/null 2>&1; then
            log "no neovim package is available from apt here; see $apt_log"
            exit 3
        fi
        log "apt-get install neovim failed; last lines of $apt_log:"
        tail -n 20 "$apt_log" >&2
        exit 1
    fi
    command -v nvim >/dev/null || { log "apt-get installed neovim but there is no nvim on PATH"; exit 1; }
fi

version="$(nvim --version | head -n 1)"   # "NVIM v0.7.2"
if ! [[ "$version" =~ ^NVIM\ v([0-9]+)\.([0-9]+) ]] \
   || { [ "${BASH_REMATCH[1]}" = 0 ] && [ "${BASH_REMATCH[2]}" -lt 7 ]; }; then
    log "$(command -v nvim) is '$version'; the test needs Neovim 0.7 or newer"
    exit 1
fi
echo "NVIM=$(command -v nvim)"
