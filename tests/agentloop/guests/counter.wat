;; Keeps a counter in a global and one in linear memory, bumps both every activation and
;; reports whether either had been touched before: with a fresh instance per activation both
;; always start at zero, so the output is always "fresh".
(module
{{ALLOC}}
  (global $count (mut i32) (i32.const 0))
  (data (i32.const 1024) "{\"status\":\"completed\",\"output\":\"fresh\"} ")
  (data (i32.const 1088) "{\"status\":\"completed\",\"output\":\"reused\"}")
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (local $seen i32)
    (local.set $seen (i32.or (global.get $count) (i32.load (i32.const 2048))))
    (global.set $count (i32.add (global.get $count) (i32.const 1)))
    (i32.store (i32.const 2048) (i32.add (i32.load (i32.const 2048)) (i32.const 1)))
    (if (result i64) (local.get $seen)
      (then (i64.const 0x0000044000000028))     ;; 1088 << 32 | 40
      (else (i64.const 0x0000040000000028)))))  ;; 1024 << 32 | 40 (trailing space is JSON)
