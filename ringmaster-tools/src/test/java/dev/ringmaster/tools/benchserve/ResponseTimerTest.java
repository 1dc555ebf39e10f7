package dev.ringmaster.tools.benchserve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** Timing of streamed responses, fed lines at chosen instants (nanoseconds from 0). */
class ResponseTimerTest {
  private static final long MS = 1_000_000;

  @Test
  void nativeEventsSplitEachGapOverTheTokensTheyAdd() throws Exception {
    ResponseTimer t = new ResponseTimer(Backend.NATIVE, 0);
    t.line(nat("We", 1), 100 * MS);
    t.line("", 101 * MS);
    t.line(nat("We the", 2), 110 * MS);
    t.line(nat("We the people", 5), 140 * MS); // 3 tokens in one event: 10 ms each
    t.line(nat("We the people", 5), 150 * MS); // the final event repeats the text
    t.line("data: [DONE]", 151 * MS);
    RequestOutput o = t.result(99, null);
    assertThat(o.success()).isTrue();
    assertThat(o.ttftS()).isCloseTo(0.100, within(1e-12));
    assertThat(o.itlS()).containsExactly(0.010, 0.010, 0.010, 0.010);
    assertThat(o.latencyS()).isCloseTo(0.151, within(1e-12));
    assertThat(o.outputLen()).isEqualTo(5);
    assertThat(o.serverPromptTokens()).isEqualTo(3);
    assertThat(o.generatedText()).isEqualTo("We the people");
  }

  @Test
  void openAiChunksCountOneLatencyPerChunkAndTakeTheUsageCount() throws Exception {
    ResponseTimer t = new ResponseTimer(Backend.CHAT, 0);
    t.line(chat(""), 50 * MS); // the role chunk carries no text
    t.line(chat("Hello"), 80 * MS);
    t.line(chat(""), 85 * MS);
    t.line(chat(" world"), 100 * MS);
    t.line(chat("!"), 130 * MS);
    t.line(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":4}}", 131 * MS);
    t.line("data: [DONE]", 132 * MS);
    RequestOutput o = t.result(99, null);
    assertThat(o.ttftS()).isCloseTo(0.080, within(1e-12));
    assertThat(o.itlS()[0]).isCloseTo(0.020, within(1e-12));
    assertThat(o.itlS()[1]).isCloseTo(0.030, within(1e-12));
    assertThat(o.itlS()).hasSize(2);
    assertThat(o.outputLen()).isEqualTo(4);
    assertThat(o.serverPromptTokens()).isEqualTo(7);
    assertThat(o.generatedText()).isEqualTo("Hello world!");
    assertThat(o.latencyS()).isCloseTo(0.132, within(1e-12));
  }

  @Test
  void withoutAServerCountTheTokenizerCountsThenTheRequestStands() throws Exception {
    ResponseTimer t = new ResponseTimer(Backend.COMPLETIONS, 0);
    t.line("data: {\"choices\":[{\"index\":0,\"text\":\"the union\"}]}", 10 * MS);
    t.line("data:[DONE]", 11 * MS); // no space after the colon is valid too
    assertThat(t.result(42, null).outputLen()).isEqualTo(42);
    var tok = DatasetsTest.tokenizer();
    assertThat(t.result(42, tok).outputLen()).isEqualTo(tok.encode("the union", false).length);
  }

  @Test
  void errorEventsAndCutStreamsFail() throws Exception {
    ResponseTimer t = new ResponseTimer(Backend.COMPLETIONS, 0);
    t.line("data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}", 10 * MS);
    t.line("data: {\"error\":{\"message\":\"engine fault\",\"type\":\"server_error\"}}", 20 * MS);
    RequestOutput o = t.result(4, null);
    assertThat(o.success()).isFalse();
    assertThat(o.error()).contains("engine fault");
    ResponseTimer cut = new ResponseTimer(Backend.NATIVE, 0);
    cut.line(nat("a", 1), 10 * MS);
    assertThat(cut.sawDone()).isFalse();
  }

  private static String nat(String text, int tokens) {
    return "data: {\"text\":\""
        + text
        + "\",\"meta_info\":{\"prompt_tokens\":3,\"completion_tokens\":"
        + tokens
        + "}}";
  }

  private static String chat(String content) {
    return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + content + "\"}}]}";
  }
}
