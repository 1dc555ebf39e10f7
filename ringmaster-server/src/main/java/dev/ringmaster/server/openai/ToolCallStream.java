package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.server.api.Json;
import java.util.ArrayList;
import java.util.List;

/**
 * One streamed choice's reply while tools are in play, turned into OpenAI deltas as it arrives.
 * Text that is content for sure goes out as content deltas at once; text that may still become
 * calls (a reply's start, an unfinished {@code <tool_call>} tag after content) is held. Once a
 * call's name is known the stream commits to calls: a delta starts each call ({@code index}, {@code
 * id}, {@code type}, {@code function.name}, empty {@code arguments}), then deltas carry the
 * arguments' text as it arrives. Text after the calls that is not calls goes out as content, from
 * the end of the last complete call. So a reply of text and then calls streams as OpenAI's do:
 * content deltas, then tool-call deltas.
 */
final class ToolCallStream {
  private final ToolCallScanner scanner;
  private final StringBuilder text = new StringBuilder();
  private final List<Integer> argumentsSent = new ArrayList<>();
  private int contentSent; // how much of the text's start went out as content
  private boolean trailing; // calls were followed by text that is not calls: all is content now
  private ToolCallScanner.State state = ToolCallScanner.State.PENDING;

  ToolCallStream(ToolCallScanner scanner) {
    this.scanner = scanner;
  }

  /** The deltas (each an OpenAI {@code delta} object) that new text makes, in order. */
  List<ObjectNode> append(String more) {
    if (trailing) {
      return more.isEmpty() ? List.of() : List.of(contentDelta(more));
    }
    text.append(more);
    ToolCallScanner.Scan scan = scanner.scan(text.toString());
    state = scan.state();
    List<ObjectNode> out = new ArrayList<>();
    if (scan.contentEnd() > contentSent) {
      out.add(contentDelta(text.substring(contentSent, scan.contentEnd())));
      contentSent = scan.contentEnd();
    }
    switch (scan.state()) {
      case PENDING, CONTENT -> {}
      case CALLS, COMPLETE -> calls(scan, out);
      case BROKEN -> {
        calls(scan, out);
        trailing = true;
        String rest = text.substring(scan.end());
        if (!rest.isBlank()) {
          out.add(contentDelta(rest.stripLeading()));
        }
      }
    }
    return out;
  }

  /** The deltas for text still held when the reply ended (text that never became calls). */
  List<ObjectNode> finish() {
    boolean held = state == ToolCallScanner.State.PENDING || state == ToolCallScanner.State.CONTENT;
    if (!trailing && held && text.length() > contentSent) {
      String rest = text.substring(contentSent);
      contentSent = text.length();
      return List.of(contentDelta(rest));
    }
    return List.of();
  }

  /** Whether the reply, as it ended, is complete calls. */
  boolean completeCalls() {
    return !trailing && state == ToolCallScanner.State.COMPLETE;
  }

  private void calls(ToolCallScanner.Scan scan, List<ObjectNode> out) {
    for (int i = 0; i < scan.calls().size(); i++) {
      ToolCallScanner.Partial c = scan.calls().get(i);
      if (i == argumentsSent.size()) {
        ObjectNode call = callDelta(out, i);
        call.put("id", Responses.newId("call_"));
        call.put("type", "function");
        call.putObject("function").put("name", c.name()).put("arguments", "");
        argumentsSent.add(0);
      }
      int sent = argumentsSent.get(i);
      if (c.arguments().length() > sent) {
        callDelta(out, i).putObject("function").put("arguments", c.arguments().substring(sent));
        argumentsSent.set(i, c.arguments().length());
      }
    }
  }

  private static ObjectNode callDelta(List<ObjectNode> out, int index) {
    ObjectNode d = Json.object();
    ObjectNode call = d.putArray("tool_calls").addObject();
    call.put("index", index);
    out.add(d);
    return call;
  }

  private static ObjectNode contentDelta(String s) {
    return Json.object().put("content", s);
  }
}
