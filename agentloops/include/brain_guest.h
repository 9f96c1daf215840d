/*
 * brain_guest.h - a small library for writing Brain Agentloops in C.
 *
 * An Agentloop is a core Wasm module. Brain instantiates it afresh for every activation,
 * calls brain_activate with the activation JSON, and serves the loop's host calls
 * (brain.call) until brain_activate returns its result JSON. See docs/agentloop.md.
 *
 * Build (Debian clang + lld, no libc):
 *   clang --target=wasm32 -nostdlib -O2 -mbulk-memory -I agentloops/include \
 *     -Wl,--no-entry -Wl,--stack-first -o loop.wasm loop.c agentloops/include/brain_guest.c
 *
 * What the library gives you:
 *   - memory: a bump allocator over memory.grow (exported to the host as brain_alloc). A fresh
 *     instance per activation means nothing needs freeing; bg_mark/bg_release drop everything
 *     allocated after a mark when a long loop wants to reuse memory.
 *   - bg_call: send one request JSON to the host and get its result JSON.
 *   - a JSON reader working on spans of the host's JSON text (no tree is built): find a key,
 *     walk an array, compare or decode a string.
 *   - a JSON writer (bg_buf) with correct string escaping.
 *   - the brain_activate export, which calls the function you define:
 *         bg_span agentloop_activate(bg_span payload);
 *     and returns what it returns (build it with bg_buf, bg_completed_* or bg_fail*).
 *
 * Running out of memory traps (the activation fails with agentloop_error): checking every
 * append would hide the loop's logic, and an Agentloop cannot recover from it anyway.
 */
#ifndef BRAIN_GUEST_H
#define BRAIN_GUEST_H

#include <stddef.h>
#include <stdint.h>

/* A read-only run of bytes, usually a JSON value inside a host result. Not NUL-terminated. */
typedef struct {
    const char *p;
    size_t n;
} bg_span;

/* A growable byte buffer in the bump heap. Zero-initialise it: bg_buf b = {0}; */
typedef struct {
    char *p;
    size_t n;
    size_t cap;
} bg_buf;

/* ---- memory ---------------------------------------------------------------------------- */

/* Allocate n bytes (8-byte aligned). Traps when the memory limit is reached. */
void *bg_alloc(size_t n);
/* The current heap top; pass it to bg_release to drop everything allocated after it. */
size_t bg_mark(void);
/* Drop every allocation made after mark. Released bytes stay readable until the next
 * allocation overwrites them, so a buffer that ended at mark may still bg_buf_put data that
 * lies above it (the copy is a memmove). */
void bg_release(size_t mark);

/* ---- host calls ------------------------------------------------------------------------- */

/* Send one request ({"op": ...} JSON) to the host; returns the result JSON object. */
bg_span bg_call(const char *json, size_t n);
bg_span bg_call_buf(const bg_buf *request);
/* If result is an error result ({"error": {...}}), store the error object and return 1. */
int bg_is_error(bg_span result, bg_span *error);

/* ---- JSON reader ------------------------------------------------------------------------ */

bg_span bg_cstr(const char *s);
bg_span bg_trim(bg_span s);
/* Pointer just past the JSON value starting at p (leading whitespace skipped), or NULL. */
const char *bg_json_skip(const char *p, const char *end);
/* The first character of a value: '{', '[', '"', 't', 'f', 'n', or '0' for a number;
 * 0 for an empty or invalid span. */
char bg_json_kind(bg_span value);
/* Find key in the object obj (top level only). Returns 1 and the value span when found. */
int bg_json_get(bg_span obj, const char *key, bg_span *value);
/* Iterate an array: const char *it = 0; while (bg_json_next(arr, &it, &item)) { ... } */
int bg_json_next(bg_span array, const char **it, bg_span *item);
/* 1 when value is a JSON string whose decoded text equals the NUL-terminated lit. */
int bg_json_str_eq(bg_span value, const char *lit);
/* The bytes between the quotes of a JSON string value, still escaped (empty if not a
 * string). Concatenating such bodies and quoting the result is itself a valid JSON string. */
bg_span bg_json_str_body(bg_span value);
/* 1 and the value when value is a JSON integer that fits int64 (no fraction or exponent). */
int bg_json_int(bg_span value, int64_t *out);
/* Append the decoded UTF-8 text of a JSON string value to out; returns 0 if not a string. */
int bg_json_str_decode(bg_span value, bg_buf *out);

/* ---- JSON writer ------------------------------------------------------------------------ */

void bg_buf_put(bg_buf *b, const void *data, size_t n);
void bg_buf_puts(bg_buf *b, const char *s);
void bg_buf_putc(bg_buf *b, char c);
void bg_buf_put_span(bg_buf *b, bg_span s);
/* Append s (UTF-8 text, not NUL-terminated) as a quoted, escaped JSON string. */
void bg_buf_put_str(bg_buf *b, const char *s, size_t n);
void bg_buf_put_cstr(bg_buf *b, const char *s);
void bg_buf_put_int(bg_buf *b, int64_t v);
bg_span bg_buf_span(const bg_buf *b);

/* ---- activation results ---------------------------------------------------------------- */

/* The function every Agentloop defines; brain_activate calls it with the activation JSON
 * ({"kind":"turn","session_id",...,"input",...}) and returns the span it returns. */
bg_span agentloop_activate(bg_span payload);

/* {"status":"completed","output":<output_json>} where output_json is any JSON value. */
bg_span bg_completed(bg_span output_json);
/* {"status":"failed","error":{"code":code,"message":message}} */
bg_span bg_fail(const char *code, const char *message);
/* The same from a host error object {"code","message"}: the host's code is passed on. */
bg_span bg_fail_with(bg_span error);

#endif
