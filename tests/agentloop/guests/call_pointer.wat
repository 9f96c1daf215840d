;; Calls the host with a pointer and length from the test, usually outside guest memory.
(module
{{ALLOC}}
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (call $call (i32.const {{PTR}}) (i32.const {{LEN}}))))
