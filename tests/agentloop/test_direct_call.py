"""The direct call into a guest's exports gives what wasmtime-py's `Func.__call__` gives: the
same results, the same traps. It uses wasmtime-py internals, so this is also the test that
fails first if an upgrade of the pinned wasmtime moves them."""

from __future__ import annotations

import pytest
import wasmtime

from brain.agentloop.direct_call import call_ints

GUEST = """
(module
  (func $host (import "env" "host") (param i32) (result i32))
  (func (export "add_one") (param i32) (result i32)
    local.get 0 i32.const 1 i32.add)
  (func (export "pack") (param i32 i32) (result i64)
    local.get 0 i64.extend_i32_u i64.const 32 i64.shl
    local.get 1 i64.extend_i32_u i64.or)
  (func (export "boom") (param i32) (result i32)
    unreachable)
  (func (export "stop_in_host") (param i32) (result i32)
    local.get 0 call $host))
"""


class HostStopped(Exception):
    pass


@pytest.fixture
def guest() -> tuple[wasmtime.Store, dict[str, wasmtime.Func]]:
    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    module = wasmtime.Module(engine, GUEST)

    def host(value: int) -> int:
        if value < 0:
            raise HostStopped()
        return value * 2

    imported = wasmtime.Func(store, wasmtime.FuncType([wasmtime.ValType.i32()],
                                                      [wasmtime.ValType.i32()]), host)
    instance = wasmtime.Instance(store, module, [imported])
    exports = instance.exports(store)
    return store, {name: exports[name] for name in ("add_one", "pack", "boom", "stop_in_host")}


@pytest.mark.parametrize("value", [0, 41, 2**31 - 2, -5])
def test_an_i32_result_is_what_func_call_gives(guest, value: int) -> None:
    store, funcs = guest
    assert call_ints(funcs["add_one"], store, value) == funcs["add_one"](store, value)


@pytest.mark.parametrize("high, low", [(0, 0), (7, 300), (2**31 - 1, 2**31 - 1)])
def test_an_i64_result_is_what_func_call_gives(guest, high: int, low: int) -> None:
    store, funcs = guest
    got = call_ints(funcs["pack"], store, high, low)
    assert got == funcs["pack"](store, high, low) == (high << 32) | low


def test_a_trap_raises_as_func_call_raises(guest) -> None:
    store, funcs = guest
    with pytest.raises(wasmtime.Trap) as direct:
        call_ints(funcs["boom"], store, 1)
    with pytest.raises(wasmtime.Trap) as checked:
        funcs["boom"](store, 1)
    assert direct.value.trap_code == checked.value.trap_code == wasmtime.TrapCode.UNREACHABLE


def test_an_exception_in_a_host_call_comes_out_of_the_direct_call(guest) -> None:
    store, funcs = guest
    assert call_ints(funcs["stop_in_host"], store, 4) == 8
    with pytest.raises(HostStopped):
        call_ints(funcs["stop_in_host"], store, -1)
    assert call_ints(funcs["stop_in_host"], store, 5) == 10  # nothing left behind


def test_a_wrong_argument_count_is_refused(guest) -> None:
    store, funcs = guest
    with pytest.raises(wasmtime.WasmtimeError):
        call_ints(funcs["pack"], store, 1)
