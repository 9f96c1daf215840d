"""Calls into a guest's own exports without wasmtime-py's per-call type probing.

`Func.__call__` asks the store for the function's type on every call (a new FuncType and a
list of ValTypes each time) and converts each argument by that type: about 17 µs a call here.
`brain_alloc` runs for the activation payload and for every guest call's result, several times
a turn. The ABI check (modules.py) has already fixed the types of `brain_alloc` (i32 -> i32)
and `brain_activate` (i32, i32 -> i64) when the module was compiled, so the arguments are
written as i32 values directly and the one result is read as the kind it carries. The call
itself and its trap handling are wasmtime-py's own: `wasmtime_func_call` inside `enter_wasm`,
which raises a `wasmtime.Trap` (an epoch interrupt included) exactly as `Func.__call__` does.

This uses wasmtime-py's internal modules (`wasmtime._ffi`, `wasmtime._func.enter_wasm`), which
the exact pin in setup.cfg holds still; tests/agentloop/test_direct_call.py fails first if an
upgrade moves them.
"""

from __future__ import annotations

from ctypes import byref

import wasmtime
from wasmtime import _ffi as ffi
from wasmtime._func import enter_wasm

_I32 = ffi.WASMTIME_I32.value
_I64 = ffi.WASMTIME_I64.value


def call_ints(func: wasmtime.Func, store: wasmtime.Store | wasmtime.Caller, *args: int) -> int:
    """Call `func`, whose parameters are all i32 and which returns one i32 or i64."""
    params = (ffi.wasmtime_val_t * len(args))()
    for slot, value in zip(params, args, strict=True):
        slot.kind = _I32
        slot.of.i32 = value
    results = (ffi.wasmtime_val_t * 1)()
    with enter_wasm(store) as trap:
        error = ffi.wasmtime_func_call(store._context(), byref(func._func), params, len(args),
                                       results, 1, trap)
        if error:
            raise wasmtime.WasmtimeError._from_ptr(error)
    result = results[0]
    if result.kind == _I32:
        return result.of.i32
    if result.kind == _I64:
        return result.of.i64
    raise wasmtime.WasmtimeError(f"the guest returned a value of kind {result.kind}, not an int")
