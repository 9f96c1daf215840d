;; Calls the host in a loop forever: each call re-arms the epoch deadline, so only the overall
;; deadline checked in every guest call can stop it (stack hazard 7, docs/architecture.md).
(module
{{ALLOC}}
  (data (i32.const 1024) "{\"op\":\"telemetry.record\",\"name\":\"tick\"}")
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (loop $forever
      (drop (call $call (i32.const 1024) (i32.const 39)))
      (br $forever))
    (i64.const 0)))
