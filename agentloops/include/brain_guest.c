/*
 * brain_guest.c - implementation of brain_guest.h (see there for the why).
 *
 * Freestanding: no libc. Copies use __builtin_memmove, which clang lowers to the
 * bulk-memory memory.copy instruction when built with -mbulk-memory.
 */
#include "brain_guest.h"

#define BG_EXPORT(name) __attribute__((export_name(name)))
#define BG_PAGE 65536u

__attribute__((import_module("brain"), import_name("call"))) extern uint64_t
brain_host_call(uint32_t ptr, uint32_t len);

extern unsigned char __heap_base;

/* ---- memory ---------------------------------------------------------------------------- */

static size_t heap_top; /* 0 until the first allocation: a fresh instance starts empty */

static size_t align8(size_t v) { return (v + 7u) & ~(size_t)7u; }

static size_t heap_start(void) {
    if (heap_top == 0) heap_top = align8((size_t)&__heap_base);
    return heap_top;
}

/* Make sure [0, end) is inside linear memory; returns 0 when memory.grow refuses. */
static int ensure_memory(size_t end) {
    size_t have = __builtin_wasm_memory_size(0) * (size_t)BG_PAGE;
    if (end <= have) return 1;
    size_t pages = (end - have + BG_PAGE - 1) / BG_PAGE;
    return __builtin_wasm_memory_grow(0, pages) != (size_t)-1;
}

/* Exported for the host, which allocates the activation payload and every host-call result
 * here. Returns 0 when the memory limit refuses the request (the host reports it). */
BG_EXPORT("brain_alloc") uint32_t brain_alloc(int32_t len) {
    if (len < 0) return 0;
    size_t start = heap_start();
    size_t end = start + (size_t)len;
    if (end < start || !ensure_memory(end)) return 0;
    heap_top = align8(end);
    return (uint32_t)start;
}

void *bg_alloc(size_t n) {
    if (n > 0x7fffffffu) __builtin_trap();
    uint32_t p = brain_alloc((int32_t)n);
    if (p == 0) __builtin_trap(); /* memory limit: fail the activation */
    return (void *)(uintptr_t)p;
}

size_t bg_mark(void) { return heap_start(); }

void bg_release(size_t mark) {
    if (mark >= (size_t)&__heap_base && mark <= heap_top) heap_top = align8(mark);
}

/* ---- host calls ------------------------------------------------------------------------- */

static bg_span unpack(uint64_t packed) {
    bg_span s = {(const char *)(uintptr_t)(uint32_t)(packed >> 32), (size_t)(uint32_t)packed};
    return s;
}

bg_span bg_call(const char *json, size_t n) {
    return unpack(brain_host_call((uint32_t)(uintptr_t)json, (uint32_t)n));
}

bg_span bg_call_buf(const bg_buf *request) { return bg_call(request->p, request->n); }

int bg_is_error(bg_span result, bg_span *error) {
    bg_span e;
    if (!bg_json_get(result, "error", &e)) return 0;
    if (error) *error = e;
    return 1;
}

/* ---- JSON reader ------------------------------------------------------------------------ */

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && is_ws(*p)) p++;
    return p;
}

bg_span bg_cstr(const char *s) {
    bg_span r = {s, 0};
    while (s[r.n]) r.n++;
    return r;
}

bg_span bg_trim(bg_span s) {
    const char *p = skip_ws(s.p, s.p + s.n);
    const char *end = s.p + s.n;
    while (end > p && is_ws(end[-1])) end--;
    bg_span r = {p, (size_t)(end - p)};
    return r;
}

/* Past the closing quote of the string whose opening quote is at p, or NULL. */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') {
            p++;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return 0;
}

const char *bg_json_skip(const char *p, const char *end) {
    p = skip_ws(p, end);
    if (p >= end) return 0;
    if (*p == '"') return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        size_t depth = 0;
        while (p < end) {
            char c = *p;
            if (c == '"') {
                p = skip_string(p, end);
                if (!p) return 0;
                continue;
            }
            if (c == '{' || c == '[') depth++;
            if (c == '}' || c == ']') {
                if (--depth == 0) return p + 1;
            }
            p++;
        }
        return 0;
    }
    const char *start = p;
    while (p < end && !is_ws(*p) && *p != ',' && *p != '}' && *p != ']' && *p != ':') p++;
    return p > start ? p : 0;
}

char bg_json_kind(bg_span value) {
    bg_span v = bg_trim(value);
    if (v.n == 0) return 0;
    char c = v.p[0];
    if (c == '-' || (c >= '0' && c <= '9')) return '0';
    if (c == '{' || c == '[' || c == '"' || c == 't' || c == 'f' || c == 'n') return c;
    return 0;
}

int bg_json_get(bg_span obj, const char *key, bg_span *value) {
    const char *end = obj.p + obj.n;
    const char *p = skip_ws(obj.p, end);
    if (p >= end || *p != '{') return 0;
    p++;
    for (;;) {
        p = skip_ws(p, end);
        if (p >= end || *p != '"') return 0; /* '}' (not found) or malformed */
        const char *kend = skip_string(p, end);
        if (!kend) return 0;
        bg_span k = {p, (size_t)(kend - p)};
        p = skip_ws(kend, end);
        if (p >= end || *p != ':') return 0;
        const char *vstart = skip_ws(p + 1, end);
        const char *vend = bg_json_skip(vstart, end);
        if (!vend) return 0;
        if (bg_json_str_eq(k, key)) {
            value->p = vstart;
            value->n = (size_t)(vend - vstart);
            return 1;
        }
        p = skip_ws(vend, end);
        if (p >= end || *p != ',') return 0;
        p++;
    }
}

int bg_json_next(bg_span array, const char **it, bg_span *item) {
    const char *end = array.p + array.n;
    const char *p = *it;
    if (!p) {
        p = skip_ws(array.p, end);
        if (p >= end || *p != '[') return 0;
        p = skip_ws(p + 1, end);
        if (p < end && *p == ']') return 0;
    } else {
        p = skip_ws(p, end);
        if (p >= end || *p != ',') return 0;
        p = skip_ws(p + 1, end);
    }
    const char *vend = bg_json_skip(p, end);
    if (!vend) return 0;
    item->p = p;
    item->n = (size_t)(vend - p);
    *it = vend;
    return 1;
}

bg_span bg_json_str_body(bg_span value) {
    bg_span v = bg_trim(value);
    bg_span r = {v.p, 0};
    if (v.n >= 2 && v.p[0] == '"' && v.p[v.n - 1] == '"') {
        r.p = v.p + 1;
        r.n = v.n - 2;
    }
    return r;
}

int bg_json_int(bg_span value, int64_t *out) {
    bg_span v = bg_trim(value);
    size_t i = 0;
    int negative = v.n > 0 && v.p[0] == '-';
    if (negative) i++;
    if (i >= v.n) return 0;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t u = 0;
    for (; i < v.n; i++) {
        char c = v.p[i];
        if (c < '0' || c > '9') return 0;
        uint64_t digit = (uint64_t)(c - '0');
        if (u > (limit - digit) / 10) return 0;
        u = u * 10 + digit;
    }
    *out = negative ? (int64_t)(0 - u) : (int64_t)u;
    return 1;
}

static int hex4(const char *p, const char *end, uint32_t *out) {
    if (end - p < 4) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* Decode one character of a string body at *pp into out (1-4 UTF-8 bytes); returns the byte
 * count, or 0 on a malformed escape. */
static int decode_char(const char **pp, const char *end, char out[4]) {
    const char *p = *pp;
    if (*p != '\\') {
        out[0] = *p;
        *pp = p + 1;
        return 1;
    }
    if (end - p < 2) return 0;
    char e = p[1];
    p += 2;
    uint32_t cp;
    switch (e) {
    case '"': cp = '"'; break;
    case '\\': cp = '\\'; break;
    case '/': cp = '/'; break;
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'u': {
        if (!hex4(p, end, &cp)) return 0;
        p += 4;
        uint32_t lo;
        if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
            hex4(p + 2, end, &lo) && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        } else if (cp >= 0xD800 && cp < 0xE000) {
            cp = 0xFFFD; /* a lone surrogate has no UTF-8 form */
        }
        break;
    }
    default: return 0;
    }
    *pp = p;
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int bg_json_str_eq(bg_span value, const char *lit) {
    bg_span v = bg_trim(value);
    if (v.n < 2 || v.p[0] != '"' || v.p[v.n - 1] != '"') return 0;
    const char *p = v.p + 1;
    const char *end = v.p + v.n - 1;
    while (p < end) {
        char ch[4];
        int k = decode_char(&p, end, ch);
        if (k == 0) return 0;
        for (int i = 0; i < k; i++) {
            if (*lit == 0 || *lit != ch[i]) return 0;
            lit++;
        }
    }
    return *lit == 0;
}

int bg_json_str_decode(bg_span value, bg_buf *out) {
    bg_span v = bg_trim(value);
    if (v.n < 2 || v.p[0] != '"' || v.p[v.n - 1] != '"') return 0;
    const char *p = v.p + 1;
    const char *end = v.p + v.n - 1;
    while (p < end) {
        char ch[4];
        int k = decode_char(&p, end, ch);
        if (k == 0) return 0;
        bg_buf_put(out, ch, (size_t)k);
    }
    return 1;
}

/* ---- JSON writer ------------------------------------------------------------------------ */

static void reserve(bg_buf *b, size_t extra) {
    size_t need = b->n + extra;
    if (need < b->n) __builtin_trap();
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < need) cap *= 2;
    /* The newest allocation grows in place: the common case for a buffer being built. */
    if (b->p && (size_t)b->p + b->cap == heap_top) {
        size_t end = (size_t)b->p + cap;
        if (end < (size_t)b->p || !ensure_memory(end)) __builtin_trap();
        heap_top = align8(end);
        b->cap = cap;
        return;
    }
    char *p = (char *)bg_alloc(cap);
    if (b->n) __builtin_memmove(p, b->p, b->n);
    b->p = p;
    b->cap = cap;
}

void bg_buf_put(bg_buf *b, const void *data, size_t n) {
    if (n == 0) return;
    reserve(b, n);
    __builtin_memmove(b->p + b->n, data, n);
    b->n += n;
}

void bg_buf_puts(bg_buf *b, const char *s) {
    bg_span c = bg_cstr(s);
    bg_buf_put(b, c.p, c.n);
}

void bg_buf_putc(bg_buf *b, char c) { bg_buf_put(b, &c, 1); }

void bg_buf_put_span(bg_buf *b, bg_span s) { bg_buf_put(b, s.p, s.n); }

void bg_buf_put_str(bg_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    bg_buf_putc(b, '"');
    size_t run = 0; /* bytes copied verbatim in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = 0;
        char u[6];
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c == '\b') esc = "\\b";
        else if (c == '\f') esc = "\\f";
        else if (c < 0x20 || c == 0x7f) {
            u[0] = '\\', u[1] = 'u', u[2] = '0', u[3] = '0';
            u[4] = hex[c >> 4], u[5] = hex[c & 15];
        } else {
            run++;
            continue; /* UTF-8 bytes >= 0x80 pass through unchanged */
        }
        bg_buf_put(b, s + i - run, run);
        run = 0;
        if (esc) bg_buf_puts(b, esc);
        else bg_buf_put(b, u, 6);
    }
    bg_buf_put(b, s + n - run, run);
    bg_buf_putc(b, '"');
}

void bg_buf_put_cstr(bg_buf *b, const char *s) {
    bg_span c = bg_cstr(s);
    bg_buf_put_str(b, c.p, c.n);
}

void bg_buf_put_int(bg_buf *b, int64_t v) {
    char tmp[24];
    int i = 24;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[--i] = '-';
    bg_buf_put(b, tmp + i, (size_t)(24 - i));
}

bg_span bg_buf_span(const bg_buf *b) {
    bg_span s = {b->p, b->n};
    return s;
}

/* ---- activation ------------------------------------------------------------------------- */

bg_span bg_completed(bg_span output_json) {
    bg_buf b = {0};
    bg_buf_puts(&b, "{\"status\":\"completed\",\"output\":");
    bg_buf_put_span(&b, output_json);
    bg_buf_putc(&b, '}');
    return bg_buf_span(&b);
}

bg_span bg_fail(const char *code, const char *message) {
    bg_buf b = {0};
    bg_buf_puts(&b, "{\"status\":\"failed\",\"error\":{\"code\":");
    bg_buf_put_cstr(&b, code);
    bg_buf_puts(&b, ",\"message\":");
    bg_buf_put_cstr(&b, message);
    bg_buf_puts(&b, "}}");
    return bg_buf_span(&b);
}

bg_span bg_fail_with(bg_span error) {
    bg_span code, message;
    if (!bg_json_get(error, "code", &code) || bg_json_kind(code) != '"') {
        return bg_fail("internal", "the host returned an error without a code");
    }
    bg_buf b = {0};
    bg_buf_puts(&b, "{\"status\":\"failed\",\"error\":{\"code\":");
    bg_buf_put_span(&b, code);
    bg_buf_puts(&b, ",\"message\":");
    if (bg_json_get(error, "message", &message) && bg_json_kind(message) == '"') {
        bg_buf_put_span(&b, message);
    } else {
        bg_buf_puts(&b, "\"\"");
    }
    bg_buf_puts(&b, "}}");
    return bg_buf_span(&b);
}

BG_EXPORT("brain_activate") uint64_t brain_activate(uint32_t ptr, uint32_t len) {
    bg_span payload = {(const char *)(uintptr_t)ptr, len};
    bg_span out = agentloop_activate(payload);
    return ((uint64_t)(uint32_t)(uintptr_t)out.p << 32) | (uint32_t)out.n;
}
