"""Actor-message tracing (BRAIN_TRACE) and the `brain trace` reader.

The writer (`writer`, `lines`) runs inside every actor and web worker; the reader (`model`,
`check`, `diagram`, `html`, `command`) is the operator's viewer. Both live in the `brain`
package, not under tools/, because `brain trace` must work from a plain (non-editable) install.
"""
