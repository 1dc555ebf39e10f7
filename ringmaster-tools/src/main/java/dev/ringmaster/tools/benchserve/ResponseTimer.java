package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.model.tokenizer.Tokenizer;
import java.io.IOException;
import java.util.Arrays;

/** The timing state of one response, fed line by line (streams) or whole (no streaming). */
final class ResponseTimer {
  private final Backend backend;
  private final long start;
  private double ttft = -1;
  private double ttftFirstToken = Double.NaN;
  private long lastChunk;
  private long lastLine;
  private double[] itl = new double[16];
  private int itlCount;
  private final StringBuilder text = new StringBuilder();
  private int completionTokens = -1;
  private int promptTokens = -1;
  private int nativeTokensSeen;
  private boolean sawDone;
  private String error;

  ResponseTimer(Backend backend, long start) {
    this.backend = backend;
    this.start = start;
    this.lastLine = start;
  }

  String error() {
    return error;
  }

  boolean sawDone() {
    return sawDone;
  }

  void fail(String why) {
    error = why;
  }

  /** One line of a server-sent event stream, read at {@code now}. */
  void line(String raw, long now) throws IOException {
    String line = raw.strip();
    if (line.isEmpty() || line.startsWith(":") || !line.startsWith("data:")) {
      return; // blank separators, comments, event names
    }
    lastLine = now;
    String data = line.substring("data:".length()).strip();
    if (data.equals("[DONE]")) {
      sawDone = true;
      return;
    }
    JsonNode o = RequestBodies.JSON.readTree(data);
    if (o.has("error")) {
      fail("error event: " + RequestClient.errorText(o.get("error")));
      return;
    }
    if (backend == Backend.NATIVE) {
      nativeEvent(o, now);
    } else {
      openAiChunk(o, now);
    }
  }

  /** A whole (non-streamed) response, received at {@code now}. */
  void whole(JsonNode o, long now) {
    lastLine = now;
    sawDone = true;
    if (o.has("error")) {
      fail("error: " + RequestClient.errorText(o.get("error")));
      return;
    }
    ttft = (now - start) / 1e9;
    if (backend == Backend.NATIVE) {
      JsonNode one = o.isArray() ? o.path(0) : o;
      text.append(one.path("text").asText(""));
      meta(one.path("meta_info"));
    } else {
      JsonNode choice = o.path("choices").path(0);
      text.append(
          backend == Backend.CHAT
              ? choice.path("message").path("content").asText("")
              : choice.path("text").asText(""));
      usage(o.path("usage"));
    }
  }

  private void nativeEvent(JsonNode o, long now) {
    String t = o.path("text").asText("");
    meta(o.path("meta_info"));
    if (Double.isNaN(ttftFirstToken) && (o.path("output_ids").size() > 0 || completionTokens > 0)) {
      ttftFirstToken = (now - start) / 1e9; // a token, its text possibly still held back
    }
    if (t.isEmpty()) {
      return;
    }
    text.setLength(0);
    text.append(t); // cumulative
    int seen = Math.max(completionTokens, 0);
    if (ttft < 0) {
      ttft = (now - start) / 1e9;
    } else {
      int added = seen - nativeTokensSeen;
      if (added <= 0) {
        return; // the final event repeats the text
      }
      double share = (now - lastChunk) / 1e9 / added;
      for (int i = 0; i < added; i++) {
        addItl(share);
      }
    }
    lastChunk = now;
    nativeTokensSeen = seen;
  }

  private void openAiChunk(JsonNode o, long now) {
    usage(o.path("usage"));
    JsonNode choice = o.path("choices").path(0);
    String t =
        backend == Backend.CHAT
            ? choice.path("delta").path("content").asText("")
            : choice.path("text").asText("");
    if (t.isEmpty()) {
      return; // a role, a finish reason or the usage chunk
    }
    if (ttft < 0) {
      ttft = (now - start) / 1e9;
    } else {
      addItl((now - lastChunk) / 1e9);
    }
    lastChunk = now;
    text.append(t);
  }

  private void meta(JsonNode m) {
    if (m.path("completion_tokens").isInt()) {
      completionTokens = m.get("completion_tokens").asInt();
    }
    if (m.path("prompt_tokens").isInt()) {
      promptTokens = m.get("prompt_tokens").asInt();
    }
  }

  private void usage(JsonNode u) {
    meta(u); // the same two field names
  }

  private void addItl(double s) {
    if (itlCount == itl.length) {
      itl = Arrays.copyOf(itl, itlCount * 2);
    }
    itl[itlCount++] = s;
  }

  /**
   * What was measured.
   *
   * @param requested the output length asked for, counted when neither the server nor a tokenizer
   *     can count
   */
  RequestOutput result(int requested, Tokenizer tokenizer) {
    if (error != null) {
      return RequestOutput.failed(start, error);
    }
    String generated = text.toString();
    int out =
        completionTokens >= 0
            ? completionTokens
            : tokenizer != null ? tokenizer.encode(generated, false).length : requested;
    return new RequestOutput(
        true,
        "",
        start,
        Math.max(ttft, 0),
        Arrays.copyOf(itl, itlCount),
        (lastLine - start) / 1e9,
        out,
        promptTokens,
        generated,
        ttftFirstToken);
  }
}
