package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
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
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The structured-output target: every finished output of the {@link SchemaSuite} (200 distinct
 * schemas) is valid against its schema, checked by an independent validator (networknt
 * json-schema-validator, draft 2020-12 with format assertions on). Each schema runs through one
 * batch engine per model, on the embedded model and on a random-weight model, greedy and sampled
 * (fixed seeds) with jump-forward on, and every fourth one again, greedy and sampled alternating,
 * on an engine with jump-forward off. Each request's token budget is the schema's byte bound plus
 * the end token, so no output may be cut by {@code max_tokens}.
 */
class JsonSchemaSuiteTest {
  private static final long SEED = 2026_12_01L;
  private static final int SCHEMAS = 200;
  // Bounds every schema's output so its token budget fits the random model's 256-token context.
  private static final int MAX_SCHEMA_BYTES = 200;
  private static final int JUMP_OFF_EVERY = 4;
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
  private static final SchemaRegistry VALIDATORS =
      SchemaRegistry.withDefaultDialect(
          SpecificationVersion.DRAFT_2020_12,
          b ->
              b.schemaRegistryConfig(
                  SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()));

  /** The tallies of one model's runs. */
  private record Counts(int runs, int finished, int valid, int cutByLength, List<String> failures) {
    String summary(String model) {
      return model
          + ": "
          + runs
          + " runs of "
          + SCHEMAS
          + " schemas, "
          + finished
          + " finished, "
          + valid
          + " valid, "
          + cutByLength
          + " cut by max_tokens, "
          + failures.size()
          + " failures";
    }
  }

  /** One submitted run: its schema, how it decoded and its output. */
  private record Run(SchemaSuite.Entry entry, String how, ByteOutput out) {}

  @Test
  void suiteIsDistinctDeterministicAndCoversTheSubset() {
    List<SchemaSuite.Entry> suite = SchemaSuite.generate(SEED, SCHEMAS, MAX_SCHEMA_BYTES);
    assertThat(suite).hasSize(SCHEMAS);
    assertThat(suite.stream().map(e -> e.schema().toString()).distinct()).hasSize(SCHEMAS);
    assertThat(SchemaSuite.generate(SEED, SCHEMAS, MAX_SCHEMA_BYTES)).isEqualTo(suite);
    Map<String, Long> coverage =
        suite.stream()
            .flatMap(e -> e.features().stream())
            .collect(Collectors.groupingBy(f -> f, TreeMap::new, Collectors.counting()));
    List<String> expected =
        List.of(
            "properties",
            "required",
            "optional property",
            "nested object",
            "additionalProperties",
            "items",
            "minItems",
            "maxItems",
            "enum",
            "const",
            "pattern",
            "pattern with length",
            "multipleOf",
            "minLength",
            "maxLength",
            "format:date",
            "format:time",
            "format:date-time",
            "format:uuid",
            "type:integer",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "type:number",
            "type:boolean",
            "type:null",
            "type:string",
            "type:array",
            "type:object",
            "type list",
            "anyOf",
            "oneOf",
            "allOf",
            "$ref",
            "$defs");
    for (String f : expected) {
      assertThat(coverage.getOrDefault(f, 0L))
          .as("schemas using %s (coverage %s)", f, coverage)
          .isGreaterThanOrEqualTo(3);
    }
    // Every schema compiles (no generated keyword is outside the subset).
    for (SchemaSuite.Entry e : suite) {
      JsonSchemaCompiler.compile(e.schema());
    }
  }

  /**
   * Each format accepts what it should ("+" samples) and refuses the rest ("-"), and everything it
   * accepts the validator accepts too.
   */
  @Test
  void formatsAcceptOnlyWhatTheValidatorAccepts() throws Exception {
    Map<String, List<String>> samples =
        Map.of(
            "date",
            List.of(
                "+2024-02-29",
                "+2000-02-29",
                "-2023-02-29",
                "-1900-02-29",
                "+2024-04-30",
                "-2024-04-31",
                "+2024-12-31",
                "-2024-13-01",
                "-2024-00-10",
                "-2024-01-00"),
            "time",
            List.of(
                "+12:00:00Z",
                "-12:00:00",
                "+23:59:59.123456+18:00",
                "-12:00:00+18:01",
                "-12:00:00-05:60",
                "-24:00:00Z",
                "+00:00:00.5-08:00"),
            "date-time",
            List.of(
                "+2024-02-29T12:00:00Z",
                "-2024-02-30T12:00:00Z",
                "+2024-01-01T00:00:00.5-08:00",
                "-2024-01-01T00:00:00",
                "-2024-06-31T10:00:00Z",
                "-2024-01-01T00:00:00+20:39",
                "+1999-12-31T23:59:59+17:59"),
            "uuid",
            List.of(
                "+123e4567-e89b-12d3-a456-426614174000",
                "-123e4567e89b12d3a456426614174000",
                "-123e4567-e89b-12d3-a456-42661417400g"));
    for (Map.Entry<String, List<String>> e : samples.entrySet()) {
      JsonNode schema = JSON.readTree("{\"type\": \"string\", \"format\": \"" + e.getKey() + "\"}");
      ByteDfa dfa = ByteDfa.of(JsonSchemaCompiler.compile(schema));
      for (String sample : e.getValue()) {
        String v = sample.substring(1);
        byte[] quoted = JSON.writeValueAsString(v).getBytes(StandardCharsets.UTF_8);
        boolean compiled = dfa.matches(quoted);
        assertThat(compiled)
            .as("format %s accepts %s", e.getKey(), v)
            .isEqualTo(sample.startsWith("+"));
        if (compiled) {
          assertThat(problem(quoted, schema)).as("validator on %s %s", e.getKey(), v).isNull();
        }
      }
    }
  }

  @Test
  void embeddedModelOutputsAreAllValid() throws Exception {
    check("models/sotu-moe");
  }

  @Test
  void randomWeightModelOutputsAreAllValid() throws Exception {
    check("fixtures/golden/deepseek_v3_basic");
  }

  private static void check(String dir) throws Exception {
    List<SchemaSuite.Entry> suite = SchemaSuite.generate(SEED, SCHEMAS, MAX_SCHEMA_BYTES);
    Tokenizer tokenizer = Tokenizer.load(RepoPaths.require(dir));
    BatchConfig config = new BatchConfig(64, 1024, 512, 16, 4096);
    List<Run> runs = new ArrayList<>();
    try (CausalLm lm = CausalLm.load(RepoPaths.require(dir))) {
      int[] eos = tokenizer.eosIds();
      if (eos.length == 0) {
        eos = lm.config().eosTokenIds().stream().mapToInt(Integer::intValue).toArray();
      }
      TokenVocabulary vocab = TokenVocabulary.of(tokenizer, lm.config().vocabSize(), eos);
      ConstraintCompiler compiler = new ConstraintCompiler(vocab);
      int[] prompt = tokenizer.encode("Answer in JSON: ");
      List<TokenConstraint> constraints = new ArrayList<>();
      for (SchemaSuite.Entry e : suite) {
        constraints.add(compiler.jsonSchema(e.schema()));
      }
      // One engine at a time over the model: all of the suite greedy and sampled, then the subset
      // with jump-forward off.
      try (BatchEngine engine = BatchEngine.start(lm, config)) {
        for (SchemaSuite.Entry e : suite) {
          TokenConstraint c = constraints.get(e.index());
          int i = e.index();
          submit(engine, runs, e, c, prompt, eos, vocab, true, 1000 + i, "greedy");
          submit(engine, runs, e, c, prompt, eos, vocab, false, 5000 + i, "sampled");
        }
        awaitAll(runs);
      }
      try (BatchEngine engine = BatchEngine.start(lm, config.withJumpForward(false))) {
        for (SchemaSuite.Entry e : suite) {
          int i = e.index();
          if (i % JUMP_OFF_EVERY == 0) {
            boolean greedy = (i / JUMP_OFF_EVERY) % 2 == 0;
            String how = (greedy ? "greedy" : "sampled") + ", jump-forward off";
            submit(engine, runs, e, constraints.get(i), prompt, eos, vocab, greedy, 9000 + i, how);
          }
        }
        awaitAll(runs);
      }
    }
    Counts counts = tally(runs);
    String summary = counts.summary(dir);
    System.out.println(summary);
    assertThat(counts.failures()).as(summary).isEmpty();
    assertThat(counts.cutByLength()).as(summary).isZero();
    assertThat(counts.valid()).as(summary).isEqualTo(counts.runs());
    assertThat(counts.runs()).as(summary).isEqualTo(2 * SCHEMAS + SCHEMAS / JUMP_OFF_EVERY);
  }

  private static void awaitAll(List<Run> runs) throws Exception {
    for (Run r : runs) {
      r.out().done.get(120, TimeUnit.SECONDS);
    }
  }

  private static void submit(
      BatchEngine engine,
      List<Run> runs,
      SchemaSuite.Entry e,
      TokenConstraint constraint,
      int[] prompt,
      int[] eos,
      TokenVocabulary vocab,
      boolean greedy,
      long seed,
      String how) {
    SamplingParams params =
        new SamplingParams(greedy ? 0 : 1, 1, 0, seed, e.maxBytes() + 1, false, List.of());
    ByteOutput out = new ByteOutput(vocab);
    runs.add(new Run(e, how, out));
    engine.submit(
        new EngineRequest(
            "schema" + e.index() + " " + how, prompt, params, eos, -1, out, constraint.newState()));
  }

  private static Counts tally(List<Run> runs) throws Exception {
    int finished = 0;
    int valid = 0;
    int cut = 0;
    List<String> failures = new ArrayList<>();
    for (Run r : runs) {
      RequestOutcome o = r.out().done.get(120, TimeUnit.SECONDS);
      byte[] bytes = r.out().bytes.toByteArray();
      String label = "schema " + r.entry().index() + " (" + r.how() + ") " + r.entry().schema();
      if (o.reason() == FinishReason.LENGTH) {
        cut++;
        failures.add(label + " ran out of its " + (r.entry().maxBytes() + 1) + " tokens");
        continue;
      }
      if (o.reason() != FinishReason.STOP) {
        failures.add(label + " finished with " + o.reason() + " " + o.error());
        continue;
      }
      finished++;
      String problem = problem(bytes, r.entry().schema());
      if (problem == null) {
        valid++;
      } else {
        failures.add(label + " -> " + new String(bytes, StandardCharsets.UTF_8) + ": " + problem);
      }
    }
    return new Counts(runs.size(), finished, valid, cut, failures);
  }

  /** Why the output is not a valid instance of the schema, or null when it is. */
  private static String problem(byte[] bytes, JsonNode schemaNode) {
    String text;
    try {
      text = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      return "not UTF-8";
    }
    JsonNode value;
    try {
      value = JSON.readTree(text);
    } catch (Exception e) {
      return "not JSON: " + e.getMessage();
    }
    Schema schema = VALIDATORS.getSchema(schemaNode);
    List<Error> errors = schema.validate(value);
    return errors.isEmpty() ? null : errors.toString();
  }
}
