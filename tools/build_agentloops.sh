#!/bin/sh
# Build every committed Agentloop module from its C sources with Debian clang + lld (no libc,
# no WASI).
#
#   tools/build_agentloops.sh            rebuild the committed modules in place
#   tools/build_agentloops.sh OUT_DIR    build the same modules into OUT_DIR instead
#
# In place, agentloops/default/loop.c becomes brain/agentloop/default.wasm (package data, so
# users need no toolchain), each agentloops/examples/NAME.c becomes agentloops/examples/NAME.wasm
# next to its source (the tests run these, so they need no toolchain either), and
# agentloops/built.txt records the compiler and the sha256 of every source and module.
# With OUT_DIR the modules go to OUT_DIR/default.wasm and OUT_DIR/examples/NAME.wasm and no
# record is written. CLANG overrides the compiler (default: clang).
#
# The build is reproducible: the same sources and the same clang give the same bytes
# (tests/agentloop/test_build.py rebuilds into a temporary directory and compares).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLANG=${CLANG:-clang}
RECORD=agentloops/built.txt

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

if [ $# -gt 0 ]; then
    case $1 in
    /*) OUT=$1 ;;
    *) OUT="$(pwd)/$1" ;;
    esac
    DEFAULT_OUT=$OUT
    EXAMPLES_OUT=$OUT/examples
else
    OUT=
    DEFAULT_OUT=brain/agentloop
    EXAMPLES_OUT=agentloops/examples
fi

cd "$ROOT"
build "$DEFAULT_OUT/default.wasm" agentloops/default/loop.c
for source in agentloops/examples/*.c; do
    build "$EXAMPLES_OUT/$(basename "$source" .c).wasm" "$source"
done

if [ -z "$OUT" ]; then
    {
        echo "# Written by tools/build_agentloops.sh: the committed modules were built from these"
        echo "# sources with this compiler (checked by tests/agentloop/test_build.py)."
        echo "# compiler: $("$CLANG" --version | head -n 1)"
        sha256sum tools/build_agentloops.sh agentloops/include/*.[ch] agentloops/default/*.c \
            agentloops/examples/*.c brain/agentloop/default.wasm agentloops/examples/*.wasm
    } > "$RECORD.tmp"
    mv "$RECORD.tmp" "$RECORD"
    echo "wrote $RECORD"
fi
