  ;; brain.call, memory and a bump brain_alloc that grows memory when needed (0 on failure).
  (import "brain" "call" (func $call (param i32 i32) (result i64)))
  (memory (export "memory") 1)
  (global $top (mut i32) (i32.const 4096))
  (func $alloc (export "brain_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local $need i32)
    (local.set $p (global.get $top))
    (local.set $need (i32.add (local.get $p) (local.get $n)))
    (if (i32.gt_u (local.get $need) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (if (i32.eq
              (memory.grow
                (i32.add
                  (i32.shr_u
                    (i32.sub (local.get $need) (i32.mul (memory.size) (i32.const 65536)))
                    (i32.const 16))
                  (i32.const 1)))
              (i32.const -1))
          (then (return (i32.const 0))))))
    (global.set $top (i32.and (i32.add (local.get $need) (i32.const 7)) (i32.const -8)))
    (local.get $p))
