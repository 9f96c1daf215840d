/*
 * The default Agentloop: append the user's input to the transcript, call the model, run the
 * tools it asks for, feed their results back, and finish with the text of the first assistant
 * message that asks for no tool.
 *
 * Every transcript change is saved with transcript.set before the next model call, so a turn
 * that fails half way leaves the conversation as far as it got. The loop has no bound of its
 * own: the host enforces the model-call limit and the turn deadline.
 *
 * Memory: the transcript is kept as one JSON text ("[m1,m2,..." without the closing bracket)
 * at the top of the bump heap. Each round releases the requests and results it made and moves
 * the new message down onto the end of the transcript, so memory stays near a few copies of
 * the transcript however many rounds the turn takes.
 */
#include "brain_guest.h"

#define LIT(s) (s), (sizeof(s) - 1)

typedef struct {
    bg_buf text;  /* "[" followed by the messages, comma-separated, no closing "]" */
    int nonempty; /* whether a message has been written */
} transcript;

/* Begin the transcript from transcript.read's messages array (text that may lie above mark:
 * it is released and moved down). */
static void transcript_start(transcript *t, size_t mark, bg_span messages) {
    bg_span arr = bg_trim(messages);
    const char *it = 0;
    bg_span first;
    t->nonempty = bg_json_next(arr, &it, &first);
    bg_release(mark);
    t->text = (bg_buf){0};
    bg_buf_put(&t->text, arr.p, arr.n - 1); /* drop the closing ']' */
}

/* Append one message; returns the span of the stored copy. */
static bg_span transcript_append(transcript *t, bg_span message) {
    if (t->nonempty) bg_buf_putc(&t->text, ',');
    size_t at = t->text.n;
    bg_buf_put_span(&t->text, message);
    t->nonempty = 1;
    bg_span stored = {t->text.p + at, message.n};
    return stored;
}

/* Call op with the whole transcript as "messages"; the result lies above the transcript. */
static bg_span call_with_messages(const transcript *t, const char *prefix, size_t prefix_n) {
    bg_buf req = {0};
    bg_buf_put(&req, prefix, prefix_n);
    bg_buf_put_span(&req, bg_buf_span(&t->text));
    bg_buf_puts(&req, "]}");
    return bg_call_buf(&req);
}

/* transcript.set; returns 1 on success or stores the host's error. */
static int save(const transcript *t, bg_span *error) {
    size_t mark = bg_mark();
    bg_span res = call_with_messages(t, LIT("{\"op\":\"transcript.set\",\"messages\":"));
    if (bg_is_error(res, error)) return 0;
    bg_release(mark);
    return 1;
}

static int is_block(bg_span block, const char *type) {
    bg_span ty;
    return bg_json_get(block, "type", &ty) && bg_json_str_eq(ty, type);
}

/* Value of key, or fallback when absent. */
static bg_span get_or(bg_span obj, const char *key, const char *fallback) {
    bg_span v;
    if (bg_json_get(obj, key, &v)) return v;
    return bg_cstr(fallback);
}

/* {"status":"completed","output":"<text of the message's text blocks>"} */
static bg_span complete_with_text(bg_span content) {
    bg_buf out = {0};
    bg_buf_putc(&out, '"');
    const char *it = 0;
    bg_span block, text;
    while (bg_json_next(content, &it, &block)) {
        if (is_block(block, "text") && bg_json_get(block, "text", &text) &&
            bg_json_kind(text) == '"') {
            bg_buf_put_span(&out, bg_json_str_body(text)); /* still escaped: stays valid JSON */
        }
    }
    bg_buf_putc(&out, '"');
    return bg_completed(bg_buf_span(&out));
}

/* Run the message's tool calls; on success the tool message is written at the top of the
 * heap and returned, otherwise the host's error is stored in *error. */
static int run_tools(bg_span content, bg_span *tool_message, bg_span *error, int *bad) {
    bg_buf req = {0};
    bg_buf_puts(&req, "{\"op\":\"tools.call\",\"calls\":[");
    const char *it = 0;
    bg_span block;
    int calls = 0;
    while (bg_json_next(content, &it, &block)) {
        if (!is_block(block, "tool_call")) continue;
        if (calls++) bg_buf_putc(&req, ',');
        bg_buf_puts(&req, "{\"id\":");
        bg_buf_put_span(&req, get_or(block, "id", "\"\""));
        bg_buf_puts(&req, ",\"name\":");
        bg_buf_put_span(&req, get_or(block, "name", "\"\""));
        bg_buf_puts(&req, ",\"input\":");
        bg_buf_put_span(&req, get_or(block, "input", "{}"));
        bg_buf_putc(&req, '}');
    }
    bg_buf_puts(&req, "]}");
    bg_span res = bg_call_buf(&req);
    if (bg_is_error(res, error)) return 0;

    bg_span results;
    if (!bg_json_get(res, "results", &results) || bg_json_kind(results) != '[') {
        *bad = 1;
        return 0;
    }
    bg_buf msg = {0};
    bg_buf_puts(&msg, "{\"role\":\"tool\",\"content\":[");
    const char *call_it = 0, *result_it = 0;
    bg_span result;
    int written = 0;
    while (bg_json_next(content, &call_it, &block)) {
        if (!is_block(block, "tool_call")) continue;
        if (!bg_json_next(results, &result_it, &result)) {
            *bad = 1; /* fewer results than calls */
            return 0;
        }
        if (written++) bg_buf_putc(&msg, ',');
        bg_buf_puts(&msg, "{\"type\":\"tool_result\",\"tool_call_id\":");
        bg_buf_put_span(&msg, get_or(block, "id", "\"\""));
        bg_buf_puts(&msg, ",\"content\":");
        bg_buf_put_span(&msg, get_or(result, "content", "\"\""));
        bg_buf_puts(&msg, ",\"is_error\":");
        bg_span is_error;
        char k = bg_json_get(result, "is_error", &is_error) ? bg_json_kind(is_error) : 0;
        bg_buf_put_span(&msg, (k == 't' || k == 'f') ? is_error : bg_cstr("false"));
        bg_buf_putc(&msg, '}');
    }
    bg_buf_puts(&msg, "]}");
    *tool_message = bg_buf_span(&msg);
    return 1;
}

static int has_tool_calls(bg_span content) {
    const char *it = 0;
    bg_span block;
    while (bg_json_next(content, &it, &block)) {
        if (is_block(block, "tool_call")) return 1;
    }
    return 0;
}

bg_span agentloop_activate(bg_span payload) {
    bg_span input, error;
    if (!bg_json_get(payload, "input", &input)) {
        return bg_fail("invalid_request", "the activation has no input");
    }
    char kind = bg_json_kind(input);
    if (kind != '"' && kind != '[') {
        return bg_fail("invalid_request", "input must be a string or a list of content blocks");
    }

    /* The user message first: the transcript must end up on top of the heap. */
    bg_buf user = {0};
    bg_buf_puts(&user, "{\"role\":\"user\",\"content\":");
    if (kind == '"') {
        bg_buf_puts(&user, "[{\"type\":\"text\",\"text\":");
        bg_buf_put_span(&user, bg_trim(input));
        bg_buf_puts(&user, "}]}");
    } else {
        bg_buf_put_span(&user, bg_trim(input));
        bg_buf_putc(&user, '}');
    }

    size_t mark = bg_mark();
    bg_span res = bg_call(LIT("{\"op\":\"transcript.read\"}"));
    /* "messages" first: a read that succeeded is then scanned once, not a second time to
     * look for an "error" member it does not have. */
    bg_span messages;
    if (!bg_json_get(res, "messages", &messages) || bg_json_kind(messages) != '[') {
        if (bg_is_error(res, &error)) return bg_fail_with(error);
        return bg_fail("agentloop_error", "transcript.read returned no messages array");
    }
    transcript t;
    transcript_start(&t, mark, messages);

    transcript_append(&t, bg_buf_span(&user));
    if (!save(&t, &error)) return bg_fail_with(error);

    for (;;) {
        mark = bg_mark();
        res = call_with_messages(&t, LIT("{\"op\":\"model.call\",\"messages\":"));
        if (bg_is_error(res, &error)) return bg_fail_with(error);
        bg_span message, content;
        if (!bg_json_get(res, "message", &message) || bg_json_kind(message) != '{') {
            return bg_fail("agentloop_error", "model.call returned no message");
        }
        bg_release(mark);
        bg_span stored = transcript_append(&t, message);
        if (!save(&t, &error)) return bg_fail_with(error);

        if (!bg_json_get(stored, "content", &content) || bg_json_kind(content) != '[') {
            return bg_fail("agentloop_error", "the model's message has no content list");
        }
        if (!has_tool_calls(content)) return complete_with_text(content);

        mark = bg_mark();
        bg_span tool_message;
        int bad = 0;
        if (!run_tools(content, &tool_message, &error, &bad)) {
            if (bad) return bg_fail("agentloop_error", "tools.call returned too few results");
            return bg_fail_with(error);
        }
        bg_release(mark);
        transcript_append(&t, tool_message);
        if (!save(&t, &error)) return bg_fail_with(error);
    }
}
