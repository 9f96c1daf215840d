;; Returns a fixed packed (ptr << 32 | len) from brain_activate, usually garbage. The bytes at
;; 1024 are {{TEXT}} for tests that return a well-placed but bad result.
(module
{{ALLOC}}
  (data (i32.const 1024) "{{TEXT}}")
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (i64.const {{PACKED}})))
