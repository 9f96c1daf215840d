/* Example Agentloop (docs/agentloop.md): counts turns in kv, asks the model without tools,
 * saves the exchange to the transcript and answers "#<n>: <model text>". */
#include "brain_guest.h"

#define CALL(lit) bg_call(lit, sizeof(lit) - 1)

bg_span agentloop_activate(bg_span payload) {
    bg_span input, res, err, value, messages, message, content, block, text;
    if (!bg_json_get(payload, "input", &input) || bg_json_kind(input) != '"')
        return bg_fail("invalid_request", "this loop takes text input");

    /* kv: the turn counter survives between activations; globals do not. */
    res = CALL("{\"op\":\"kv.read\",\"key\":\"turns\"}");
    if (bg_is_error(res, &err)) return bg_fail_with(err);
    int64_t turns = 0;
    if (bg_json_get(res, "value", &value) && bg_json_kind(value) == '0')
        for (size_t i = 0; i < value.n && value.p[i] >= '0' && value.p[i] <= '9'; i++)
            turns = turns * 10 + (value.p[i] - '0');
    bg_buf req = {0};
    bg_buf_puts(&req, "{\"op\":\"kv.put\",\"key\":\"turns\",\"value\":");
    bg_buf_put_int(&req, ++turns);
    bg_buf_putc(&req, '}');
    if (bg_is_error(bg_call_buf(&req), &err)) return bg_fail_with(err);

    /* One model call with the user's text, tools:[] so the model cannot ask for any. */
    bg_buf msgs = {0};
    bg_buf_puts(&msgs, "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":");
    bg_buf_put_span(&msgs, input);
    bg_buf_puts(&msgs, "}]}");
    bg_buf call = {0};
    bg_buf_puts(&call, "{\"op\":\"model.call\",\"tools\":[],\"messages\":");
    bg_buf_put_span(&call, bg_buf_span(&msgs));
    bg_buf_puts(&call, "]}");
    res = bg_call_buf(&call);
    if (bg_is_error(res, &err)) return bg_fail_with(err);
    if (!bg_json_get(res, "message", &message) || !bg_json_get(message, "content", &content))
        return bg_fail("agentloop_error", "model.call returned no message");

    /* Save both messages: transcript.set takes the whole conversation we want kept. */
    bg_buf set = {0};
    bg_buf_puts(&set, "{\"op\":\"transcript.set\",\"messages\":");
    bg_buf_put_span(&set, bg_buf_span(&msgs));
    bg_buf_putc(&set, ',');
    bg_buf_put_span(&set, message);
    bg_buf_puts(&set, "]}");
    if (bg_is_error(bg_call_buf(&set), &err)) return bg_fail_with(err);

    /* The answer: "#<turns>: " then the decoded text blocks, re-encoded as one JSON string. */
    bg_buf answer = {0};
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
