package dev.ringmaster.model.tokenizer;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One message of a conversation.
 *
 * @param role "system", "user", "assistant" or "tool"
 * @param content the text; null where a template expects none (an assistant turn of tool calls)
 */
public record ChatMessage(String role, String content) {
  /**
   * The message as the dict chat templates read ({@code message['role']}, {@code message.content}).
   */
  public Map<String, Object> toMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("role", role);
    m.put("content", content);
    return m;
  }
}
