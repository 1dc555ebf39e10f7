package dev.ringmaster.server.api;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;

/** The server's JSON mapper: strict on input (one value, no duplicate keys), compact on output. */
public final class Json {
  /** Shared, thread-safe mapper. */
  public static final ObjectMapper MAPPER = create();

  private Json() {}

  private static ObjectMapper create() {
    JsonMapper m =
        JsonMapper.builder()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();
    // Bound nesting so a hostile body cannot exhaust the stack.
    m.getFactory()
        .setStreamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build());
    return m;
  }

  /** A new empty object node. */
  public static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  /**
   * Parses a request body that must be one JSON object.
   *
   * @throws ApiException 400 for empty, malformed or non-object bodies and invalid UTF-8
   */
  public static ObjectNode parseObject(byte[] body) {
    if (body.length == 0) {
      throw ApiException.invalid(null, "the request body is empty; expected a JSON object");
    }
    JsonNode node;
    try {
      node = MAPPER.readTree(body);
    } catch (JsonProcessingException e) {
      throw ApiException.invalid(null, "malformed JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw ApiException.invalid(null, "unreadable request body: " + e.getMessage());
    }
    if (node == null || !node.isObject()) {
      throw ApiException.invalid(null, "the request body must be a JSON object");
    }
    return (ObjectNode) node;
  }

  /** Serializes a node. */
  public static byte[] bytes(JsonNode node) {
    try {
      return MAPPER.writeValueAsBytes(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize a JSON tree", e);
    }
  }

  /** Serializes a node to a string. */
  public static String string(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize a JSON tree", e);
    }
  }

  /** The error object for an exception. */
  public static ObjectNode error(ApiException e) {
    ObjectNode root = object();
    ObjectNode err = root.putObject("error");
    err.put("message", e.getMessage());
    err.put("type", e.type());
    err.put("param", e.param());
    err.put("code", e.code());
    return root;
  }
}
