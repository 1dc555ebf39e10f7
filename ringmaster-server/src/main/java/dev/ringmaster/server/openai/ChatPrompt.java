package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.model.tokenizer.ChatTemplate;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.Fields;
import dev.ringmaster.server.api.Json;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Renders a chat request's {@code messages} (and its tools) to prompt text with the model's chat
 * template. Messages reach the template as transformers passes them: {@code role}, {@code content},
 * and for tool use {@code tool_calls} (OpenAI's form, {@code arguments} a JSON string) and {@code
 * tool_call_id}. Tools go to a template that renders them as its {@code tools} variable; a template
 * that ignores that variable gets them as a system text describing the call format instead, and
 * then sees earlier calls as that same JSON text.
 */
final class ChatPrompt {
  private static final Set<String> ROLES =
      Set.of("system", "developer", "user", "assistant", "tool");

  private ChatPrompt() {}

  /** The prompt text for a request body's messages and tools. */
  static String render(ObjectNode body, ChatTemplate template, ToolRequest tools) {
    JsonNode msgs = body.get("messages");
    if (msgs == null || !msgs.isArray()) {
      throw ApiException.invalid("messages", "'messages' must be an array of messages");
    }
    if (msgs.isEmpty()) {
      throw ApiException.invalid("messages", "'messages' is empty");
    }
    List<Map<String, Object>> native_ = new ArrayList<>();
    List<Map<String, Object>> plain = new ArrayList<>();
    for (int i = 0; i < msgs.size(); i++) {
      message(msgs.get(i), "messages[" + i + "]", native_, plain);
    }
    try {
      if (tools.tools().isEmpty()) {
        return renderWith(template, plain, null);
      }
      // A template renders tools if giving it them changes the prompt.
      boolean nativeTools =
          !renderWith(template, native_, toolList(tools.tools()))
              .equals(renderWith(template, native_, null));
      if (nativeTools) {
        return renderWith(template, native_, tools.active() ? toolList(tools.callable()) : null);
      }
      return renderWith(
          template, tools.active() ? withSystemText(plain, toolsText(tools)) : plain, null);
    } catch (RuntimeException e) {
      throw ApiException.invalid(
          "messages", "the chat template rejected the messages: " + e.getMessage());
    }
  }

  private static List<Object> toolList(List<ToolRequest.Tool> tools) {
    List<Object> out = new ArrayList<>();
    for (ToolRequest.Tool t : tools) {
      out.add(Json.MAPPER.convertValue(toolJson(t), Object.class));
    }
    return out;
  }

  private static String renderWith(
      ChatTemplate template, List<Map<String, Object>> messages, List<Object> tools) {
    Map<String, Object> vars = new HashMap<>();
    vars.put("messages", messages);
    vars.put("add_generation_prompt", true);
    vars.put("tools", tools);
    return template.render(vars);
  }

  private static ObjectNode toolJson(ToolRequest.Tool t) {
    ObjectNode o = Json.object();
    o.put("type", "function");
    ObjectNode f = o.putObject("function");
    f.put("name", t.name());
    if (t.description() != null) {
      f.put("description", t.description());
    }
    f.set("parameters", t.parameters());
    return o;
  }

  /** The system text that describes the tools to a template that does not render them. */
  static String toolsText(ToolRequest tools) {
    StringBuilder sb = new StringBuilder();
    sb.append(
        tools.forcesCall()
            ? "Call one of these tools. Reply with only a JSON object"
            : "You may call one of these tools. To call one, reply with only a JSON object");
    sb.append(" {\"name\": <tool name>, \"arguments\": <arguments object>}");
    if (tools.parallel()) {
      sb.append(", or a JSON array of such objects to make several calls");
    }
    sb.append(".\n\nTools:\n");
    for (ToolRequest.Tool t : tools.callable()) {
      sb.append("- ").append(t.name());
      if (t.description() != null && !t.description().isEmpty()) {
        sb.append(": ").append(t.description());
      }
      sb.append("\n  parameters: ").append(Json.string(t.parameters())).append('\n');
    }
    return sb.toString().stripTrailing();
  }

  private static List<Map<String, Object>> withSystemText(
      List<Map<String, Object>> messages, String text) {
    List<Map<String, Object>> out = new ArrayList<>(messages);
    if (!out.isEmpty() && "system".equals(out.getFirst().get("role"))) {
      Map<String, Object> first = new LinkedHashMap<>(out.getFirst());
      Object content = first.get("content");
      first.put("content", (content == null || content.equals("") ? "" : content + "\n\n") + text);
      out.set(0, first);
    } else {
      Map<String, Object> sys = new LinkedHashMap<>();
      sys.put("role", "system");
      sys.put("content", text);
      out.addFirst(sys);
    }
    return out;
  }

  /**
   * Checks one message and adds it twice: as the template's tool-aware form, and as the plain form
   * (tool calls written out as the JSON text the model is asked to reply with).
   */
  private static void message(
      JsonNode m,
      String where,
      List<Map<String, Object>> nativeOut,
      List<Map<String, Object>> plainOut) {
    if (!m.isObject()) {
      throw ApiException.invalid(where, where + " must be an object");
    }
    ObjectNode o = (ObjectNode) m;
    String role = Fields.string(o, "role", null);
    if (role == null || !ROLES.contains(role)) {
      throw ApiException.invalid(where + ".role", where + ".role must be one of " + ROLES);
    }
    String text = content(o.get("content"), where);
    Map<String, Object> nat = new LinkedHashMap<>();
    nat.put("role", role);
    nat.put("content", text == null ? "" : text);
    Map<String, Object> plain = new LinkedHashMap<>(nat);
    JsonNode calls = o.get("tool_calls");
    if (calls != null && !calls.isNull() && !(calls.isArray() && calls.isEmpty())) {
      if (!role.equals("assistant")) {
        throw ApiException.invalid(
            where + ".tool_calls", where + ": only assistant messages carry 'tool_calls'");
      }
      StringBuilder written = new StringBuilder(text == null ? "" : text);
      List<Object> list = new ArrayList<>();
      for (int i = 0; i < (calls.isArray() ? calls.size() : 0); i++) {
        list.add(Json.MAPPER.convertValue(toolCall(calls.get(i), where, i, written), Object.class));
      }
      if (!calls.isArray()) {
        throw ApiException.invalid(
            where + ".tool_calls", where + ".tool_calls must be an array of tool calls");
      }
      nat.put("content", text); // null when absent: templates test `content is none`
      nat.put("tool_calls", list);
      plain.put("content", written.toString());
    }
    if (role.equals("tool")) {
      String callId = Fields.string(o, "tool_call_id", null);
      if (callId == null) {
        throw ApiException.invalid(
            where + ".tool_call_id", where + ": a 'tool' message needs its 'tool_call_id'");
      }
      nat.put("tool_call_id", callId);
      String name = Fields.string(o, "name", null);
      if (name != null) {
        nat.put("name", name);
      }
    }
    nativeOut.add(nat);
    plainOut.add(plain);
  }

  private static ObjectNode toolCall(JsonNode c, String where, int i, StringBuilder written) {
    String at = where + ".tool_calls[" + i + "]";
    if (!c.isObject() || !(c.get("function") instanceof ObjectNode f)) {
      throw ApiException.invalid(
          at, at + " must be {\"id\", \"type\": \"function\", \"function\"}");
    }
    String name = Fields.string(f, "name", null);
    if (name == null) {
      throw ApiException.invalid(at + ".function.name", at + ".function needs a 'name'");
    }
    JsonNode args = f.get("arguments");
    JsonNode parsed = Json.object();
    if (args != null && !args.isNull()) {
      try {
        parsed = args.isTextual() ? Json.MAPPER.readTree(args.asText()) : null;
      } catch (com.fasterxml.jackson.core.JacksonException e) {
        parsed = null;
      }
      if (parsed == null || !parsed.isObject()) {
        throw ApiException.invalid(
            at + ".function.arguments",
            at + ".function.arguments must be a string holding a JSON object");
      }
    }
    ObjectNode call = Json.object();
    call.put("name", name);
    call.set("arguments", parsed);
    if (!written.isEmpty()) {
      written.append('\n');
    }
    written.append(Json.string(call));
    ObjectNode out = ((ObjectNode) c).deepCopy();
    out.put("type", "function");
    return out;
  }

  private static String content(JsonNode content, String where) {
    if (content == null || content.isNull()) {
      return null;
    }
    if (content.isTextual()) {
      return Fields.checkText(where + ".content", content.textValue());
    }
    if (content.isArray()) {
      StringBuilder sb = new StringBuilder();
      for (JsonNode part : content) {
        if (!part.isObject() || !"text".equals(part.path("type").asText())) {
          throw ApiException.unsupported(
              where + ".content", "only text content parts are supported");
        }
        sb.append(Fields.string((ObjectNode) part, "text", ""));
      }
      return sb.toString();
    }
    throw ApiException.invalid(where + ".content", where + ".content must be a string or parts");
  }
}
