package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.batch.BatchConfig;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineRequest;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.RequestOutcome;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.testing.RepoPaths;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Every grammar-constrained output is in the grammar's language: random small grammars (nested
 * brackets, right-recursive lists, classes, quantifiers) and two fixed ones, generated through the
 * batch engine on the embedded model, greedy and sampled, checked by an independent matcher. An
 * output cut by its token budget must still be a prefix of a sentence.
 */
class GrammarOutputPropertyTest {
  private static final int GRAMMARS = 80;
  private static final int BUDGET = 64;

  @Test
  void embeddedModelOutputsAreInTheLanguage() throws Exception {
    List<String> grammars = new ArrayList<>();
    grammars.add(
        """
        root ::= expr
        expr ::= term (("+" | "-") term)*
        term ::= factor (("*" | "/") factor)*
        factor ::= [0-9]{1,3} | "(" expr ")"
        """);
    grammars.add(
        """
        root ::= list
        list ::= "[" (value ("," value)*)? "]"
        value ::= list | [a-z]{1,3}
        """);
    RandomGrammars random = new RandomGrammars(26);
    while (grammars.size() < GRAMMARS) {
      grammars.add(random.next());
    }
    String dir = "models/sotu-moe";
    Tokenizer tokenizer = Tokenizer.load(RepoPaths.require(dir));
    List<String> failures = new ArrayList<>();
    int finished = 0;
    int cut = 0;
    try (CausalLm lm = CausalLm.load(RepoPaths.require(dir));
        BatchEngine engine = BatchEngine.start(lm, new BatchConfig(64, 1024, 512, 16, 4096))) {
      int[] eos = tokenizer.eosIds();
      if (eos.length == 0) {
        eos = lm.config().eosTokenIds().stream().mapToInt(Integer::intValue).toArray();
      }
      TokenVocabulary vocab = TokenVocabulary.of(tokenizer, lm.config().vocabSize(), eos);
      ConstraintCompiler compiler = new ConstraintCompiler(vocab);
      int[] prompt = tokenizer.encode("The answer is ");
      List<ByteOutput> outputs = new ArrayList<>();
      for (int i = 0; i < grammars.size(); i++) {
        GrammarConstraint constraint = compiler.ebnf(grammars.get(i));
        boolean greedy = i % 2 == 0;
        SamplingParams params =
            new SamplingParams(greedy ? 0 : 1, 1, 0, 500 + i, BUDGET, false, List.of());
        ByteOutput out = new ByteOutput(vocab);
        outputs.add(out);
        engine.submit(
            new EngineRequest("g" + i, prompt, params, eos, -1, out, constraint.newState()));
      }
      for (int i = 0; i < grammars.size(); i++) {
        String g = grammars.get(i);
        RequestOutcome o = outputs.get(i).done.get(120, TimeUnit.SECONDS);
        byte[] bytes = outputs.get(i).bytes.toByteArray();
        String label =
            "grammar " + i + "\n" + g + "-> " + new String(bytes, StandardCharsets.UTF_8);
        if (o.reason() == FinishReason.LENGTH) {
          cut++;
          if (!viablePrefix(g, bytes)) {
            failures.add(label + ": cut by length and not a prefix of a sentence");
          }
          continue;
        }
        if (o.reason() != FinishReason.STOP) {
          failures.add(label + ": finished with " + o.reason() + " " + o.error());
          continue;
        }
        finished++;
        if (!GrammarChecker.matches(g, bytes)) {
          failures.add(label + ": not in the language");
        }
      }
    }
    System.out.printf(
        "grammars: %d, %d finished with stop and checked, %d cut by length%n",
        grammars.size(), finished, cut);
    assertThat(failures).isEmpty();
    assertThat(finished).isGreaterThanOrEqualTo(GRAMMARS / 2);
  }

  private static boolean viablePrefix(String grammar, byte[] bytes) {
    EarleyChart chart = new EarleyChart(Grammar.ofEbnf(grammar));
    for (byte b : bytes) {
      if (!chart.push(b & 0xff)) {
        return false;
      }
    }
    return true;
  }

  /** The oracle itself tells sentences from non-sentences (so the test above can fail). */
  @Test
  void oracleRejectsWhatIsNotInTheLanguage() {
    String g = "root ::= \"[\" item (\",\" item)* \"]\"\nitem ::= [a-c]{1,2} | root\n";
    assertThat(GrammarChecker.matches(g, "[a,[bc],[[c]]]".getBytes(StandardCharsets.UTF_8)))
        .isTrue();
    assertThat(GrammarChecker.matches(g, "[a,[bcc]]".getBytes(StandardCharsets.UTF_8))).isFalse();
    assertThat(GrammarChecker.matches(g, "[a,]".getBytes(StandardCharsets.UTF_8))).isFalse();
  }
}
