;; Sends the activation payload itself as the host-call request and completes with the host's
;; result as output: lets a test drive any guest call from Python.
(module
{{ALLOC}}
{{WRAP}}
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (call $wrap (call $call (local.get $ptr) (local.get $len)))))
