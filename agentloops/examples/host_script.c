/* Example Agentloop for exploring and testing Brain's host services: the turn's text input is
 * a JSON array of host requests, e.g. [{"op":"kv.put","key":"k","value":1},{"op":"kv.read",
 * "key":"k"}]. It sends each in order and completes with the array of results (errors
 * included, as results), so every host op can be driven from a plain HTTP message. */
#include "brain_guest.h"

bg_span agentloop_activate(bg_span payload) {
    bg_span input, request;
    if (!bg_json_get(payload, "input", &input) || bg_json_kind(input) != '"')
        return bg_fail("invalid_request", "the input must be text holding a JSON array");
    bg_buf script = {0};
    bg_json_str_decode(input, &script);
    bg_span requests = bg_trim(bg_buf_span(&script));
    if (bg_json_kind(requests) != '[')
        return bg_fail("invalid_request", "the input must be a JSON array of host requests");

    bg_buf out = {0};
    bg_buf_putc(&out, '[');
    const char *it = 0;
    int count = 0;
    while (bg_json_next(requests, &it, &request)) {
        if (count++) bg_buf_putc(&out, ',');
        bg_buf req = {0};
        bg_buf_put_span(&req, request);
        bg_buf_put_span(&out, bg_call_buf(&req));
    }
    bg_buf_putc(&out, ']');
    return bg_completed(bg_buf_span(&out));
}
