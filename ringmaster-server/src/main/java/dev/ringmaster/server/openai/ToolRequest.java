package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.constraint.ConstraintCompiler;
import dev.ringmaster.engine.constraint.OutputConstraint;
import dev.ringmaster.engine.constraint.UnsupportedConstraintException;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.Fields;
import dev.ringmaster.server.api.Json;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The {@code tools}, {@code tool_choice} and {@code parallel_tool_calls} of a chat request,
 * checked. A tool call is the JSON object {@code {"name": ..., "arguments": {...}}}, several calls
 * a JSON array of them; {@code required} and a named function force calls with a JSON-schema
 * constraint (anyOf over the callable tools), {@code auto} lets the model choose and reads calls
 * back when the whole output is calls ({@link ToolCallScanner}), {@code none} neither shows the
 * tools to the model nor reads calls back.
 *
 * @param tools the declared tools, in request order (empty when none were given)
 * @param choice how the model may call them
 * @param forced the function {@code tool_choice} names, or null
 * @param parallel whether one reply may hold several calls ({@code parallel_tool_calls})
 * @param deepSeekSyntax whether DeepSeek-V3's tool-call tokens are read back (the tokenizer has
 *     them)
 */
record ToolRequest(
    List<Tool> tools, Choice choice, String forced, boolean parallel, boolean deepSeekSyntax) {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");
  private static final Set<String> TOOL_FIELDS = Set.of("type", "function");
  private static final Set<String> FUNCTION_FIELDS =
      Set.of("name", "description", "parameters", "strict");

  /** How the model may call tools. */
  enum Choice {
    /** No tools: plain content only. */
    NONE,
    /** The model decides; a reply that is tool calls becomes {@code tool_calls}. */
    AUTO,
    /** Calls to the tools (one without {@code parallel}), enforced by the output constraint. */
    REQUIRED,
    /** Calls to the named tool (one without {@code parallel}), enforced by the constraint. */
    NAMED
  }

  /**
   * One function tool.
   *
   * @param name the function name
   * @param description what it does, or null
   * @param parameters the JSON schema of its arguments (an empty object schema when not given)
   */
  record Tool(String name, String description, ObjectNode parameters) {}

  /**
   * A parsed tool call.
   *
   * @param name the function called
   * @param arguments the arguments object's JSON text, as the model wrote it
   */
  record Call(String name, String arguments) {}

  /** Whether the model sees the tools and its output may be read as a call. */
  boolean active() {
    return choice != Choice.NONE;
  }

  /** Whether the output is constrained to be a call. */
  boolean forcesCall() {
    return choice == Choice.REQUIRED || choice == Choice.NAMED;
  }

  /** The tools the model may call: all of them, or the one {@code tool_choice} names. */
  List<Tool> callable() {
    return choice == Choice.NAMED
        ? tools.stream().filter(t -> t.name().equals(forced)).toList()
        : choice == Choice.NONE ? List.of() : tools;
  }

  /**
   * Parses and checks {@code tools}, {@code tool_choice} and {@code parallel_tool_calls} of a chat
   * request body.
   *
   * @param deepSeekTokens whether the model's tokenizer has DeepSeek-V3's tool-call tokens
   */
  static ToolRequest parse(ObjectNode body, boolean deepSeekTokens) {
    List<Tool> tools = new ArrayList<>();
    JsonNode t = body.get("tools");
    if (t != null && !t.isNull()) {
      if (!t.isArray()) {
        throw ApiException.invalid("tools", "'tools' must be an array of tool objects");
      }
      Set<String> names = new HashSet<>();
      for (int i = 0; i < t.size(); i++) {
        Tool tool = tool(t.get(i), "tools[" + i + "]");
        if (!names.add(tool.name())) {
          throw ApiException.invalid(
              "tools[" + i + "].function.name",
              "tools[" + i + "]: the function name '" + tool.name() + "' is declared twice");
        }
        tools.add(tool);
      }
    }
    JsonNode c = body.get("tool_choice");
    Choice choice = tools.isEmpty() ? Choice.NONE : Choice.AUTO;
    String forced = null;
    if (c != null && !c.isNull()) {
      if (c.isTextual()) {
        choice =
            switch (c.asText()) {
              case "none" -> Choice.NONE;
              case "auto" -> Choice.AUTO;
              case "required" -> Choice.REQUIRED;
              default ->
                  throw ApiException.invalid(
                      "tool_choice",
                      "'tool_choice' must be 'none', 'auto', 'required' or"
                          + " {\"type\": \"function\", \"function\": {\"name\": ...}}, got '"
                          + c.asText()
                          + "'");
            };
      } else if (c.isObject()) {
        ObjectNode o = (ObjectNode) c;
        ObjectNode f = Fields.object(o, "function");
        if (!"function".equals(Fields.string(o, "type", null)) || f == null) {
          throw ApiException.invalid(
              "tool_choice",
              "a 'tool_choice' object must be {\"type\": \"function\", \"function\": {\"name\":"
                  + " ...}}");
        }
        forced = Fields.string(f, "name", null);
        String named = forced;
        if (named == null || tools.stream().noneMatch(x -> x.name().equals(named))) {
          throw ApiException.invalid(
              "tool_choice.function.name",
              "tool_choice names the function '"
                  + named
                  + "', which is not among the request's tools");
        }
        choice = Choice.NAMED;
      } else {
        throw ApiException.invalid("tool_choice", "'tool_choice' must be a string or an object");
      }
      if (tools.isEmpty() && choice != Choice.NONE) {
        throw ApiException.invalid(
            "tool_choice", "'tool_choice' '" + c.asText() + "' needs a non-empty 'tools' array");
      }
    }
    boolean parallel = Fields.bool(body, "parallel_tool_calls", true);
    return new ToolRequest(List.copyOf(tools), choice, forced, parallel, deepSeekTokens);
  }

  private static Tool tool(JsonNode n, String where) {
    if (!n.isObject()) {
      throw ApiException.invalid(where, where + " must be a tool object");
    }
    ObjectNode o = (ObjectNode) n;
    Fields.onlyKnown(o, where, TOOL_FIELDS);
    String type = Fields.string(o, "type", null);
    if (!"function".equals(type)) {
      throw ApiException.invalid(
          where + ".type", where + ".type must be 'function' (the only tool type supported)");
    }
    ObjectNode f = Fields.object(o, "function");
    if (f == null) {
      throw ApiException.invalid(where + ".function", where + " needs a 'function' object");
    }
    Fields.onlyKnown(f, where + ".function", FUNCTION_FIELDS);
    String name = Fields.string(f, "name", null);
    if (name == null || !NAME.matcher(name).matches()) {
      throw ApiException.invalid(
          where + ".function.name",
          where
              + ".function.name is "
              + (name == null ? "missing" : "'" + name + "'")
              + ": a function needs a name of 1 to 64 letters, digits, '_', '.' or '-'");
    }
    String description = Fields.string(f, "description", null);
    JsonNode p = f.get("parameters");
    ObjectNode params;
    if (p == null || p.isNull()) {
      params = Json.object();
      params.put("type", "object");
      params.putObject("properties");
      params.put("additionalProperties", false);
    } else if (p.isObject()) {
      params = (ObjectNode) p;
      JsonNode type2 = params.get("type");
      if (type2 != null && !"object".equals(type2.asText())) {
        throw ApiException.invalid(
            where + ".function.parameters",
            where + ".function.parameters must be a JSON schema of type 'object', got " + type2);
      }
    } else {
      throw ApiException.invalid(
          where + ".function.parameters",
          where + ".function.parameters must be a JSON schema object");
    }
    return new Tool(name, description, params);
  }

  /**
   * The constraint forcing calls to the callable tools, or null when calls are not forced.
   *
   * @throws ApiException naming the tool whose parameters schema the compiler cannot take
   */
  OutputConstraint constraint(ConstraintCompiler compiler) {
    if (!forcesCall()) {
      return null;
    }
    try {
      return compiler.jsonSchema(callSchema());
    } catch (UnsupportedConstraintException e) {
      // Name the tool at fault: compile each one alone (the failure path only).
      for (int i = 0; i < tools.size(); i++) {
        Tool t = tools.get(i);
        try {
          compiler.jsonSchema(t.parameters());
        } catch (UnsupportedConstraintException one) {
          throw ApiException.unsupported(
              "tools[" + i + "].function.parameters",
              "tools[" + i + "].function.parameters ('" + t.name() + "'): " + one.getMessage());
        }
      }
      throw ApiException.unsupported("tools", "the tools' schemas: " + e.getMessage());
    }
  }

  /**
   * The schema of the forced output: a call, anyOf over the callable tools of {@code {"name":
   * <const>, "arguments": <parameters>}}, or with {@code parallel} also a non-empty array of calls.
   * Each tool's {@code $defs} and {@code definitions} move to the root, where its local {@code
   * $ref}s point.
   */
  ObjectNode callSchema() {
    ObjectNode root = Json.object();
    ObjectNode one = Json.object();
    ArrayNode any = one.putArray("anyOf");
    for (Tool t : callable()) {
      ObjectNode params = t.parameters().deepCopy();
      for (String defs : List.of("$defs", "definitions")) {
        JsonNode d = params.remove(defs);
        if (d != null && d.isObject()) {
          ObjectNode into = root.has(defs) ? (ObjectNode) root.get(defs) : root.putObject(defs);
          for (var e : d.properties()) {
            JsonNode prior = into.get(e.getKey());
            if (prior != null && !prior.equals(e.getValue())) {
              throw ApiException.unsupported(
                  "tools",
                  "two tools define different '"
                      + defs
                      + "/"
                      + e.getKey()
                      + "' schemas; give them distinct names");
            }
            into.set(e.getKey(), e.getValue());
          }
        }
      }
      ObjectNode call = any.addObject();
      call.put("type", "object");
      ObjectNode props = call.putObject("properties");
      props.putObject("name").put("const", t.name());
      props.set("arguments", params);
      call.putArray("required").add("name").add("arguments");
      call.put("additionalProperties", false);
    }
    if (parallel) {
      ObjectNode many = Json.object().put("type", "array").put("minItems", 1);
      many.set("items", one);
      root.putArray("anyOf").add(one.deepCopy()).add(many);
    } else {
      root.set("anyOf", one.get("anyOf"));
    }
    return root;
  }

  /** The scanner that reads this request's calls out of a reply. */
  ToolCallScanner scanner() {
    Set<String> names = new HashSet<>();
    callable().forEach(t -> names.add(t.name()));
    return new ToolCallScanner(names, parallel ? Integer.MAX_VALUE : 1, deepSeekSyntax);
  }

  /**
   * A finished reply read as tool calls.
   *
   * @param content the text before the calls, empty when the reply starts with them
   * @param calls the calls, in order
   */
  record Reply(String content, List<Call> calls) {}

  /**
   * Reads a finished reply as tool calls: empty unless the tools are active and the text, spaces
   * aside, is calls to callable tools, possibly after content ({@link ToolCallScanner}).
   */
  Optional<Reply> parseReply(String text) {
    if (!active()) {
      return Optional.empty();
    }
    ToolCallScanner.Scan scan = scanner().scan(text);
    if (scan.state() != ToolCallScanner.State.COMPLETE) {
      return Optional.empty();
    }
    return Optional.of(
        new Reply(
            text.substring(0, scan.contentEnd()),
            scan.calls().stream().map(c -> new Call(c.name(), c.arguments())).toList()));
  }

  /** The calls of {@link #parseReply}, empty when the reply is not calls. */
  List<Call> parseCalls(String text) {
    return parseReply(text).map(Reply::calls).orElse(List.of());
  }

  /** The OpenAI {@code tool_calls} entry of a call. */
  static ObjectNode toolCallJson(Call call, String id) {
    ObjectNode c = Json.object();
    c.put("id", id);
    c.put("type", "function");
    ObjectNode f = c.putObject("function");
    f.put("name", call.name());
    f.put("arguments", call.arguments());
    return c;
  }
}
