;; Never returns and never calls the host: only epoch interruption can stop it.
(module
{{ALLOC}}
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (loop $forever (br $forever))
    (i64.const 0)))
