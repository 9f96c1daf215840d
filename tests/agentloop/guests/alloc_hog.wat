;; Fills memory to just under the limit, then asks the host for something: the host's
;; brain_alloc for the result fails and the activation must fail with a clear message.
(module
{{ALLOC}}
  (data (i32.const 1024) "{\"op\":\"transcript.read\"}")
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (loop $more
      (br_if $more (i32.ne (call $alloc (i32.const 65536)) (i32.const 0))))
    (loop $crumbs
      (br_if $crumbs (i32.ne (call $alloc (i32.const 8)) (i32.const 0))))
    (call $call (i32.const 1024) (i32.const 24))))
