#!/bin/sh
# Build the shipped Agentloops with Debian clang + lld (no libc, no WASI).
#
#   tools/build_agentloops.sh [OUT_DIR]
#
# OUT_DIR defaults to brain/agentloop/, where default.wasm is committed as package data so
# users need no toolchain. The build is reproducible: the same sources and clang give the same
# bytes (tests/agentloop/test_build.py rebuilds into a temporary directory and compares).
# CLANG overrides the compiler (default: clang).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-"$ROOT/brain/agentloop"}
CLANG=${CLANG:-clang}
mkdir -p "$OUT"

# Relative source paths and a fixed working directory keep the output independent of where
# the repository lives; no -g, so no paths or timestamps reach the module.
cd "$ROOT"
"$CLANG" --target=wasm32 -nostdlib -ffreestanding -O2 -mbulk-memory \
    -std=c11 -Wall -Wextra -Werror \
    -I agentloops/include \
    -Wl,--no-entry -Wl,--stack-first -Wl,-z,stack-size=65536 \
    -o "$OUT/default.wasm.tmp" \
    agentloops/default/loop.c agentloops/include/brain_guest.c
chmod 644 "$OUT/default.wasm.tmp"
mv "$OUT/default.wasm.tmp" "$OUT/default.wasm"
echo "built $OUT/default.wasm"
