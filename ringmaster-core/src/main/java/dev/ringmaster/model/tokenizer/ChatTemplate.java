package dev.ringmaster.model.tokenizer;

import dev.ringmaster.model.tokenizer.jinja.Template;
import dev.ringmaster.model.tokenizer.jinja.TemplateException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A model's chat template (the Jinja {@code chat_template} of tokenizer_config.json), rendered with
 * the variables transformers' {@code apply_chat_template} passes: {@code messages}, {@code
 * add_generation_prompt}, {@code tools} and {@code documents} (None unless given), {@code
 * bos_token} and {@code eos_token}.
 */
public final class ChatTemplate {
  private final Template template;
  private final String bosToken;
  private final String eosToken;

  private ChatTemplate(Template template, String bosToken, String eosToken) {
    this.template = template;
    this.bosToken = bosToken;
    this.eosToken = eosToken;
  }

  /**
   * Parses a chat template.
   *
   * @param source the Jinja source
   * @param bosToken the text of the BOS token, or null
   * @param eosToken the text of the EOS token, or null
   * @throws TemplateException if the template uses a construct outside the supported subset
   */
  public static ChatTemplate parse(String source, String bosToken, String eosToken) {
    return new ChatTemplate(Template.parse(source), bosToken, eosToken);
  }

  /**
   * Renders a conversation to the prompt text (which still has to be encoded, without adding
   * special tokens again: the template writes BOS itself).
   *
   * @param addGenerationPrompt end with the opening of an assistant turn
   * @throws TemplateException when rendering fails or the template raises an exception
   */
  public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
    Map<String, Object> vars = new HashMap<>();
    vars.put("messages", messages.stream().map(ChatMessage::toMap).toList());
    vars.put("add_generation_prompt", addGenerationPrompt);
    return render(vars);
  }

  /**
   * Renders with arbitrary variables (for messages with tool calls, tools, or template-specific
   * flags). {@code bos_token}, {@code eos_token}, {@code tools} and {@code documents} are filled in
   * when absent.
   */
  public String render(Map<String, ?> variables) {
    Map<String, Object> vars = new HashMap<>(variables);
    vars.putIfAbsent("bos_token", bosToken == null ? "" : bosToken);
    vars.putIfAbsent("eos_token", eosToken == null ? "" : eosToken);
    vars.putIfAbsent("tools", null);
    vars.putIfAbsent("documents", null);
    return template.render(vars);
  }
}
