#!/bin/sh
# Install mlir-lsp-server, the native language server bench/lsp_latency.py compares
# RelayLens with: Debian's (and Ubuntu's) package mlir-16-tools, which puts it in
# /usr/lib/llvm-16/bin.  Does nothing when one is already installed.
#
#     sh bench/mlir_setup.sh
set -eu

found=$(command -v mlir-lsp-server 2>/dev/null || ls /usr/lib/llvm-*/bin/mlir-lsp-server 2>/dev/null | tail -n 1 || true)
if [ -n "$found" ]; then
    echo "mlir-lsp-server: $found"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: no apt-get here; install MLIR's tools (mlir-lsp-server) with your package manager," >&2
    echo "       then run bench/lsp_latency.py --mlir /path/to/mlir-lsp-server" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo=sudo
fi
install() {
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends mlir-16-tools
}
install || { $sudo apt-get update && install; }
echo "mlir-lsp-server: /usr/lib/llvm-16/bin/mlir-lsp-server"
