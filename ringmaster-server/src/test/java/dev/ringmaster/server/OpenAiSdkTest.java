package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.openai.client.OpenAIClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.NotFoundException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionChoice;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.models.Model;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The official OpenAI Java SDK against a real server. */
class OpenAiSdkTest {
  private static TestServer s;
  private static OpenAIClient client;

  @BeforeAll
  static void start() {
    s = TestServer.start();
    client = s.openAi();
  }

  @AfterAll
  static void stop() {
    client.close();
    s.close();
  }

  private static CompletionCreateParams.Builder completion(String prompt, long maxTokens) {
    return CompletionCreateParams.builder()
        .model(TestServer.MODEL)
        .prompt(prompt)
        .maxTokens(maxTokens)
        .temperature(0.0);
  }

  @Test
  void listsTheModel() {
    List<Model> models = client.models().list().data();
    assertThat(models).extracting(Model::id).containsExactly(TestServer.MODEL);
  }

  @Test
  void completionPlainAndStreamedAgree() {
    Completion c = client.completions().create(completion("the union", 12).build());
    String text = c.choices().getFirst().text();
    assertThat(c.usage().orElseThrow().promptTokens()).isPositive();
    assertThat(c.usage().orElseThrow().completionTokens()).isBetween(1L, 12L);
    StringBuilder streamed = new StringBuilder();
    List<CompletionChoice.FinishReason> reasons = new ArrayList<>();
    long[] usage = {-1};
    try (StreamResponse<Completion> st =
        client
            .completions()
            .createStreaming(
                completion("the union", 12)
                    .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build())
                    .build())) {
      st.stream()
          .forEach(
              chunk -> {
                for (CompletionChoice ch : chunk.choices()) {
                  streamed.append(ch.text());
                  ch._finishReason().asKnown().ifPresent(reasons::add);
                }
                chunk.usage().ifPresent(u -> usage[0] = u.completionTokens());
              });
    }
    assertThat(streamed.toString()).isEqualTo(text);
    assertThat(reasons).containsExactly(c.choices().getFirst().finishReason());
    assertThat(usage[0]).isEqualTo(c.usage().orElseThrow().completionTokens());
  }

  @Test
  void chatPlainAndStreamedAgree() {
    ChatCompletionCreateParams p =
        ChatCompletionCreateParams.builder()
            .model(TestServer.MODEL)
            .addUserMessage("hello there")
            .maxCompletionTokens(10)
            .temperature(0.0)
            .build();
    ChatCompletion c = client.chat().completions().create(p);
    String text = c.choices().getFirst().message().content().orElseThrow();
    assertThat(c.usage().orElseThrow().completionTokens()).isBetween(1L, 10L);
    StringBuilder streamed = new StringBuilder();
    List<String> roles = new ArrayList<>();
    try (StreamResponse<ChatCompletionChunk> st = client.chat().completions().createStreaming(p)) {
      st.stream()
          .forEach(
              chunk -> {
                for (ChatCompletionChunk.Choice ch : chunk.choices()) {
                  ch.delta().content().ifPresent(streamed::append);
                  ch.delta().role().ifPresent(r -> roles.add(r.asString()));
                }
              });
    }
    assertThat(streamed.toString()).isEqualTo(text);
    assertThat(roles).containsExactly("assistant");
  }

  @Test
  void stopStringsCutTheTextAndEndWithStop() throws InterruptedException {
    Completion full = client.completions().create(completion("the union", 20).build());
    String text = full.choices().getFirst().text();
    assertThat(text.length()).isGreaterThan(4);
    String stop = text.substring(2, 4);
    int cut = text.indexOf(stop);
    Completion c = client.completions().create(completion("the union", 20).stop(stop).build());
    CompletionChoice ch = c.choices().getFirst();
    assertThat(ch.text()).isEqualTo(text.substring(0, cut));
    assertThat(ch.finishReason()).isEqualTo(CompletionChoice.FinishReason.STOP);
    StringBuilder streamed = new StringBuilder();
    try (StreamResponse<Completion> st =
        client.completions().createStreaming(completion("the union", 20).stop(stop).build())) {
      st.stream().forEach(chunk -> chunk.choices().forEach(x -> streamed.append(x.text())));
    }
    assertThat(streamed.toString()).isEqualTo(text.substring(0, cut));
    // A stop string ends the request in the engine too: its KV blocks are back.
    s.awaitDrained();
  }

  @Test
  void nChoicesWithSeedsAreIndexedAndReproducible() {
    CompletionCreateParams p = completion("once upon", 8).temperature(0.9).n(3).seed(42).build();
    Completion a = client.completions().create(p);
    Completion b = client.completions().create(p);
    assertThat(a.choices()).extracting(CompletionChoice::index).containsExactly(0L, 1L, 2L);
    assertThat(a.choices())
        .extracting(CompletionChoice::text)
        .containsExactlyElementsOf(b.choices().stream().map(CompletionChoice::text).toList());
    assertThat(a.usage().orElseThrow().completionTokens())
        .isEqualTo(b.usage().orElseThrow().completionTokens());
  }

  @Test
  void logprobsForCompletionsAndChat() {
    Completion c = client.completions().create(completion("the", 5).logprobs(3).build());
    CompletionChoice.Logprobs lp = c.choices().getFirst().logprobs().orElseThrow();
    assertThat(lp.tokens().orElseThrow()).hasSize(lp.tokenLogprobs().orElseThrow().size());
    assertThat(lp.tokenLogprobs().orElseThrow())
        .allSatisfy(v -> assertThat(v).isLessThanOrEqualTo(0));
    assertThat(lp.topLogprobs().orElseThrow()).isNotEmpty();

    ChatCompletion chat =
        client
            .chat()
            .completions()
            .create(
                ChatCompletionCreateParams.builder()
                    .model(TestServer.MODEL)
                    .addUserMessage("hi")
                    .maxCompletionTokens(4)
                    .temperature(0.0)
                    .logprobs(true)
                    .topLogprobs(2)
                    .build());
    var content = chat.choices().getFirst().logprobs().orElseThrow().content().orElseThrow();
    assertThat(content).isNotEmpty();
    assertThat(content).allSatisfy(t -> assertThat(t.topLogprobs()).hasSize(2));
    // Greedy: the chosen token is the most likely one.
    assertThat(content)
        .allSatisfy(t -> assertThat(t.logprob()).isEqualTo(t.topLogprobs().getFirst().logprob()));
  }

  @Test
  void errorsSurfaceAsSdkExceptions() {
    assertThatThrownBy(() -> client.completions().create(completion("hi", 1000).build()))
        .isInstanceOf(BadRequestException.class)
        .hasMessageContaining("max_tokens");
    assertThatThrownBy(
            () -> client.completions().create(completion("hi", 4).model("no-such-model").build()))
        .isInstanceOf(NotFoundException.class);
  }
}
