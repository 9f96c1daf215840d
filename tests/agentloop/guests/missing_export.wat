;; Has brain_alloc and memory but no brain_activate.
(module
{{ALLOC}})
