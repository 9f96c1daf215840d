;; Sends the constant {{REQUEST}} (any bytes, JSON or not) as the request and completes with
;; the host's result as output.
(module
{{ALLOC}}
{{WRAP}}
  (data (i32.const 1024) "{{REQUEST}}")
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (call $wrap (call $call (i32.const 1024) (i32.const {{REQUEST_LEN}})))))
