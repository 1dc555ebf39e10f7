package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.batch.BatchConfig;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineRequest;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.RequestOutcome;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.testing.RepoPaths;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every constrained output is valid: random JSON schemas and regexes from a fixed seed, each
 * generated through the batch engine on the embedded model and on a random-weight model, greedy and
 * sampled, checked by Jackson and an independent schema checker, or by {@link java.util.regex}.
 */
class ConstrainedOutputPropertyTest {
  private static final int SCHEMAS = 200;
  private static final int REGEXES = 50;
  // Bounds every schema's output so its token budget fits the random model's 256-token context.
  private static final int MAX_SCHEMA_BYTES = 200;
  private static final int REGEX_TOKENS = 64;
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  /** A constrained request: its kind, its constraint text and its token budget. */
  private record Case(String what, String text, JsonNode schema, int budget) {}

  private static List<Case> cases() {
    List<Case> cases = new ArrayList<>();
    RandomSchemas schemas = new RandomSchemas(26);
    while (cases.size() < SCHEMAS) {
      RandomSchemas.Sample s = schemas.next(3);
      if (s.maxBytes() <= MAX_SCHEMA_BYTES) {
        cases.add(new Case("schema", s.schema().toString(), s.schema(), s.maxBytes() + 1));
      }
    }
    RandomRegexes regexes = new RandomRegexes(62);
    for (int i = 0; i < REGEXES; i++) {
      RandomRegexes.Sample r = regexes.next(false);
      int budget = r.maxBytes() < REGEX_TOKENS ? r.maxBytes() + 1 : REGEX_TOKENS;
      cases.add(new Case("regex", r.pattern(), null, budget));
    }
    return cases;
  }

  @Test
  void embeddedModelOutputsAreValid() throws Exception {
    checkModel("models/sotu-moe", 0);
  }

  @Test
  void randomWeightModelOutputsAreValid() throws Exception {
    checkModel("fixtures/golden/deepseek_v3_basic", 1);
  }

  /** Runs every case on one model, greedy and sampled alternating (offset by {@code parity}). */
  private static void checkModel(String dir, int parity) throws Exception {
    List<Case> cases = cases();
    Tokenizer tokenizer = Tokenizer.load(RepoPaths.require(dir));
    List<String> failures = new ArrayList<>();
    int finished = 0;
    int lengthCut = 0;
    int unboundedRegexCut = 0;
    try (CausalLm lm = CausalLm.load(RepoPaths.require(dir));
        BatchEngine engine = BatchEngine.start(lm, new BatchConfig(64, 1024, 512, 16, 4096))) {
      int[] eos = tokenizer.eosIds();
      if (eos.length == 0) {
        eos = lm.config().eosTokenIds().stream().mapToInt(Integer::intValue).toArray();
      }
      TokenVocabulary vocab = TokenVocabulary.of(tokenizer, lm.config().vocabSize(), eos);
      ConstraintCompiler compiler = new ConstraintCompiler(vocab);
      int[] prompt = tokenizer.encode("Answer: ");
      List<ByteOutput> outputs = new ArrayList<>();
      for (int i = 0; i < cases.size(); i++) {
        Case c = cases.get(i);
        TokenConstraint constraint =
            c.schema() != null ? compiler.jsonSchema(c.schema()) : compiler.regex(c.text());
        boolean greedy = (i + parity) % 2 == 0;
        SamplingParams params =
            new SamplingParams(greedy ? 0 : 1, 1, 0, 1000 + i, c.budget(), false, List.of());
        ByteOutput out = new ByteOutput(vocab);
        outputs.add(out);
        engine.submit(
            new EngineRequest(c.what() + i, prompt, params, eos, -1, out, constraint.newState()));
      }
      for (int i = 0; i < cases.size(); i++) {
        Case c = cases.get(i);
        RequestOutcome o = outputs.get(i).done.get(120, TimeUnit.SECONDS);
        byte[] bytes = outputs.get(i).bytes.toByteArray();
        String label = c.what() + " " + i + " " + c.text() + " -> ";
        if (o.reason() == FinishReason.LENGTH) {
          if (c.schema() == null && c.budget() == REGEX_TOKENS) {
            // An unbounded repeat ran past its budget: the text must still extend to a match.
            unboundedRegexCut++;
            java.util.regex.Matcher m = Pattern.compile(c.text()).matcher(text(bytes));
            if (!m.matches() && !m.hitEnd()) {
              failures.add(label + "cut at length, not a prefix of a match: " + text(bytes));
            }
            continue;
          }
          lengthCut++;
          failures.add(label + "ran out of its " + c.budget() + " tokens: " + text(bytes));
          continue;
        }
        if (o.reason() != FinishReason.STOP) {
          failures.add(label + "finished with " + o.reason() + " " + o.error());
          continue;
        }
        finished++;
        String text;
        try {
          text = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
          failures.add(label + "is not UTF-8: " + text(bytes));
          continue;
        }
        String problem =
            c.schema() != null ? schemaProblem(text, c.schema()) : regexProblem(text, c.text());
        if (problem != null) {
          failures.add(label + text + ": " + problem);
        }
      }
    }
    System.out.printf(
        "%s: %d cases, %d finished with stop and checked, %d schema/bounded cut by length,"
            + " %d unbounded regexes cut by length%n",
        dir, cases.size(), finished, lengthCut, unboundedRegexCut);
    assertThat(failures).isEmpty();
    assertThat(lengthCut).isZero();
    // Every schema case finished and was checked, and most regex cases.
    assertThat(finished).isGreaterThanOrEqualTo(SCHEMAS + REGEXES / 2);
  }

  private static String schemaProblem(String text, JsonNode schema) {
    JsonNode value;
    try {
      value = JSON.readTree(text);
    } catch (Exception e) {
      return "not JSON: " + e.getMessage();
    }
    return SchemaChecker.violation(value, schema, "$");
  }

  private static String regexProblem(String text, String regex) {
    return Pattern.compile(regex).matcher(text).matches() ? null : "does not match";
  }

  private static String text(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }
}
