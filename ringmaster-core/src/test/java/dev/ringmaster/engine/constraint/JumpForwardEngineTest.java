package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.batch.BatchConfig;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineRequest;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.RequestOutcome;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.engine.batch.TokenListener;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.testing.RepoPaths;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Jump-forward decoding in the batch engine on the embedded model, greedy, one request at a time:
 * every output stays valid, takes fewer steps than without jump-forward, and equals the output
 * without it wherever plain decoding chose, at every point a jump would start, exactly the tokens
 * the jump appends (the tokenizer's split of the sampled token and the forced bytes). Elsewhere the
 * two may differ: the same forced text split into other tokens gives the model another context from
 * there on.
 */
class JumpForwardEngineTest {
  private static final int SCHEMAS = 40;
  private static final int MAX_BYTES = 64; // the engine's bound on one run

  /** One generation's tokens and outcome. */
  private static final class Tokens implements TokenListener {
    final List<Integer> ids = new ArrayList<>();
    final CompletableFuture<RequestOutcome> done = new CompletableFuture<>();

    @Override
    public synchronized boolean onToken(TokenEvent event) {
      ids.add(event.token());
      return true;
    }

    @Override
    public void onFinish(RequestOutcome outcome) {
      done.complete(outcome);
    }
  }

  /** A run's tokens and the engine steps it took. */
  private record Run(int[] tokens, long steps, FinishReason reason) {}

  @Test
  void jumpForwardKeepsOutputsValidAndEqualAndTakesFewerSteps() throws Exception {
    List<JsonNode> schemas = new ArrayList<>();
    schemas.add(
        new ObjectMapper()
            .readTree(
                "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8},"
                    + "\"kind\":{\"enum\":[\"president address\",\"president letter\"]}},"
                    + "\"required\":[\"name\",\"kind\"]}"));
    RandomSchemas random = new RandomSchemas(7);
    while (schemas.size() < SCHEMAS) {
      RandomSchemas.Sample s = random.next(2);
      if (s.maxBytes() <= 160) {
        schemas.add(s.schema());
      }
    }
    Tokenizer tokenizer = Tokenizer.load(RepoPaths.require("models/sotu-moe"));
    int same = 0;
    int jumped = 0;
    long stepsOn = 0;
    long stepsOff = 0;
    List<String> failures = new ArrayList<>();
    try (CausalLm lm = CausalLm.load(RepoPaths.require("models/sotu-moe"))) {
      int[] eos = tokenizer.eosIds();
      TokenVocabulary vocab = TokenVocabulary.of(tokenizer, lm.config().vocabSize(), eos);
      ConstraintCompiler compiler = new ConstraintCompiler(vocab);
      int[] prompt = tokenizer.encode("The record of the address, as JSON: ");
      BatchConfig config = new BatchConfig(8, 64, 512, 16, 1024);
      try (BatchEngine off = BatchEngine.start(lm, config.withJumpForward(false));
          BatchEngine on = BatchEngine.start(lm, config)) {
        for (int i = 0; i < schemas.size(); i++) {
          TokenConstraint c = compiler.jsonSchema(schemas.get(i));
          Run plain = run(off, prompt, eos, c);
          Run jump = run(on, prompt, eos, c);
          String label = i + " " + schemas.get(i) + ": ";
          String text = spelled(vocab, jump.tokens());
          if (jump.reason() != FinishReason.STOP) {
            failures.add(label + "jump-forward run ended with " + jump.reason());
            continue;
          }
          String problem =
              SchemaChecker.violation(new ObjectMapper().readTree(text), schemas.get(i), "$");
          if (problem != null) {
            failures.add(label + text + ": " + problem);
          }
          stepsOn += jump.steps();
          stepsOff += plain.steps();
          boolean splitsAlike = plainMatchesEveryJump(c, vocab, plain.tokens(), eos);
          if (splitsAlike) {
            same++;
            if (!Arrays.equals(plain.tokens(), jump.tokens())) {
              failures.add(
                  label
                      + "differs although plain decoding split every forced run alike: "
                      + spelled(vocab, plain.tokens())
                      + " vs "
                      + text);
            }
          }
          if (jump.steps() < plain.steps()) {
            jumped++;
          }
          if (jump.steps() > plain.steps()) {
            failures.add(
                label + "more steps with jump-forward: " + jump.steps() + " > " + plain.steps());
          }
        }
      }
    }
    System.out.printf(
        "jump-forward: %d schemas, %d split alike (outputs equal), %d took fewer steps;"
            + " steps %d on vs %d off%n",
        schemas.size(), same, jumped, stepsOn, stepsOff);
    assertThat(failures).isEmpty();
    assertThat(same).isGreaterThan(SCHEMAS / 4);
    assertThat(jumped).isGreaterThan(SCHEMAS / 2);
    assertThat(stepsOn).isLessThan(stepsOff);
  }

  private static Run run(BatchEngine engine, int[] prompt, int[] eos, TokenConstraint c)
      throws Exception {
    long before = engine.stats().steps();
    Tokens out = new Tokens();
    SamplingParams greedy = new SamplingParams(0, 1, 0, 1, 200, false, List.of());
    engine.submit(new EngineRequest(null, prompt, greedy, eos, -1, out, c.newState()));
    RequestOutcome o = out.done.get(120, TimeUnit.SECONDS);
    assertThat(engine.awaitIdle(java.time.Duration.ofSeconds(10))).isTrue();
    int[] ids = out.ids.stream().mapToInt(Integer::intValue).toArray();
    assertThat(o.completionTokens()).isEqualTo(ids.length);
    return new Run(ids, engine.stats().steps() - before, o.reason());
  }

  /**
   * Whether the plain output, replayed through the constraint, holds at every token where a jump
   * would start exactly the run the jump appends.
   */
  private static boolean plainMatchesEveryJump(
      TokenConstraint c, TokenVocabulary vocab, int[] tokens, int[] eos) {
    ConstraintState s = c.newState();
    int i = 0;
    while (i < tokens.length) {
      int t = tokens[i];
      int[] run = vocab.isEos(t) ? null : s.jumpForward(t, MAX_BYTES);
      if (run != null && !(run.length == 1 && run[0] == t)) {
        run = Arrays.copyOf(run, Math.min(run.length, tokens.length - i));
        if (!Arrays.equals(run, Arrays.copyOfRange(tokens, i, i + run.length))) {
          return false;
        }
        for (int r : run) {
          s.accept(r);
        }
        i += run.length;
      } else {
        s.accept(t);
        i++;
      }
    }
    return true;
  }

  private static String spelled(TokenVocabulary vocab, int[] tokens) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int t : tokens) {
      if (!vocab.isEos(t)) {
        out.writeBytes(vocab.bytes(t));
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }
}
