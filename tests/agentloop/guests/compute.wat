;; Computes for {{ITERATIONS}} rounds of a small loop without calling the host, then completes
;; with output "computed": a turn that holds its session actor because its Agentloop works,
;; not because it waits.
(module
{{ALLOC}}
  (global $sum (mut i32) (i32.const 0))
  (data (i32.const 64) "{\"status\":\"completed\",\"output\":\"computed\"}")
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (local $i i32)
    (local.set $i (i32.const {{ITERATIONS}}))
    (block $done
      (loop $again
        (br_if $done (i32.eqz (local.get $i)))
        (global.set $sum (i32.add (global.get $sum) (local.get $i)))
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (br $again)))
    (i64.or (i64.shl (i64.const 64) (i64.const 32)) (i64.const 42))))
