;; Calls the host from its start function, before the host has the instance's exports.
(module
{{ALLOC}}
  (data (i32.const 1024) "{\"op\":\"transcript.read\"}")
  (func $early (drop (call $call (i32.const 1024) (i32.const 24))))
  (start $early)
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (i64.const 0)))
