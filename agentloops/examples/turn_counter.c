/* Example Agentloop (docs/agentloop.md): counts turns in kv, asks the model once without
 * tools, and answers "#<turn>: <model text>". */
#include "brain_guest.h"

#define CALL(lit) bg_call(lit, sizeof(lit) - 1)

bg_span agentloop_activate(bg_span payload) {
    bg_span input, res, err, value, message, content, block, text;
    if (!bg_json_get(payload, "input", &input) || bg_json_kind(input) != '"')
        return bg_fail("invalid_request", "this loop takes text input");

    res = CALL("{\"op\":\"kv.read\",\"key\":\"turns\"}"); /* globals die with the instance */
    if (bg_is_error(res, &err)) return bg_fail_with(err);
    int64_t turns = 0; /* absent (found: false) or not an integer: start counting */
    if (bg_json_get(res, "value", &value)) bg_json_int(value, &turns);
    turns++;
    bg_buf req = {0};
    bg_buf_puts(&req, "{\"op\":\"kv.put\",\"key\":\"turns\",\"value\":");
    bg_buf_put_int(&req, turns);
    bg_buf_putc(&req, '}');
    if (bg_is_error(bg_call_buf(&req), &err)) return bg_fail_with(err);

    bg_buf call = {0}; /* tools: [] offers the model no tools at all */
    bg_buf_puts(&call, "{\"op\":\"model.call\",\"tools\":[],\"messages\":[{\"role\":\"user\","
                       "\"content\":[{\"type\":\"text\",\"text\":");
    bg_buf_put_span(&call, input);
    bg_buf_puts(&call, "}]}]}");
    res = bg_call_buf(&call);
    if (bg_is_error(res, &err)) return bg_fail_with(err);
    if (!bg_json_get(res, "message", &message) || !bg_json_get(message, "content", &content))
        return bg_fail("agentloop_error", "model.call returned no message");

    bg_buf answer = {0}; /* decoded text, re-encoded below as one JSON string */
    bg_buf_putc(&answer, '#');
    bg_buf_put_int(&answer, turns);
    bg_buf_puts(&answer, ": ");
    const char *it = 0;
    while (bg_json_next(content, &it, &block))
        if (bg_json_get(block, "text", &text)) bg_json_str_decode(text, &answer);
    bg_buf out = {0};
    bg_buf_put_str(&out, answer.p, answer.n);
    return bg_completed(bg_buf_span(&out));
}
