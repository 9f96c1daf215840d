#!/bin/sh
# Build the shipped Agentloops with Debian clang + lld (no libc, no WASI).
#
#   tools/build_agentloops.sh [OUT_DIR]
#
# OUT_DIR defaults to brain/agentloop/, where default.wasm is committed as package data so
# users need no toolchain. With BUILD_EXAMPLES=1 the loops in agentloops/examples/ are built
# too, into OUT_DIR/examples/. CLANG overrides the compiler (default: clang).
#
# The build is reproducible: the same sources and clang give the same bytes
# (tests/agentloop/test_build.py rebuilds into a temporary directory and compares).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-"$ROOT/brain/agentloop"}
CLANG=${CLANG:-clang}

# build OUTPUT SOURCE... : one module from its C sources plus the guest library.
# Relative source paths from a fixed directory and no -g keep paths and timestamps out of the
# module; --stack-first puts the stack below the data, so an overflow traps instead of
# silently overwriting globals.
build() {
    output=$1
    shift
    mkdir -p "$(dirname "$output")"
    "$CLANG" --target=wasm32 -nostdlib -ffreestanding -O2 -mbulk-memory \
        -std=c11 -Wall -Wextra -Werror \
        -I agentloops/include \
        -Wl,--no-entry -Wl,--stack-first -Wl,-z,stack-size=65536 \
        -o "$output.tmp" \
        "$@" agentloops/include/brain_guest.c
    chmod 644 "$output.tmp"
    mv "$output.tmp" "$output"
    echo "built $output"
}

case $OUT in
/*) ;;
*) OUT="$(pwd)/$OUT" ;;
esac
cd "$ROOT"
build "$OUT/default.wasm" agentloops/default/loop.c
if [ "${BUILD_EXAMPLES:-0}" = 1 ]; then
    for source in agentloops/examples/*.c; do
        name=$(basename "$source" .c)
        build "$OUT/examples/$name.wasm" "$source"
    done
fi
