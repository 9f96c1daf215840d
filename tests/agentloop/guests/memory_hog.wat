;; Grows memory a page at a time until memory.grow refuses, then traps.
(module
{{ALLOC}}
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (loop $more
      (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    unreachable))
