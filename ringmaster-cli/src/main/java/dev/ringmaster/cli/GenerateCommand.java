package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.GenerationDefaults;
import dev.ringmaster.engine.GenerationResult;
import dev.ringmaster.engine.Generator;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.spec.SpeculativeGenerator;
import dev.ringmaster.engine.spec.SpeculativeResult;
import dev.ringmaster.model.tokenizer.ChatMessage;
import dev.ringmaster.model.tokenizer.ChatTemplate;
import dev.ringmaster.model.tokenizer.StreamDecoder;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.LanguageModel;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.IntPredicate;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code ringmaster generate}: one prompt, tokens streamed to stdout as they are generated. */
@Command(
    name = "generate",
    mixinStandardHelpOptions = true,
    description = "Generate a continuation of a prompt (text or token ids).")
final class GenerateCommand implements Callable<Integer> {
  @Parameters(index = "0", arity = "0..1", description = "Prompt text.")
  String prompt;

  @Option(
      names = "--model",
      description = "Hugging Face model directory (default: the embedded model).")
  Path model;

  @Option(names = "--prompt-ids", split = ",", description = "Prompt as token ids, e.g. 1,2,3.")
  int[] promptIds;

  @Option(
      names = "--max-new-tokens",
      defaultValue = "128",
      description = "Default: ${DEFAULT-VALUE}.")
  int maxNewTokens;

  @Option(
      names = "--temperature",
      description = "0 = greedy (default: the model's generation_config.json, else greedy).")
  Double temperature;

  @Option(names = "--top-p", description = "Nucleus sampling (default: generation_config.json).")
  Double topP;

  @Option(names = "--top-k", description = "0 = off (default: generation_config.json).")
  Integer topK;

  @Option(names = "--seed", defaultValue = "0", description = "Sampling seed.")
  long seed;

  @Option(names = "--ignore-eos", description = "Do not stop at end-of-sequence tokens.")
  boolean ignoreEos;

  @Option(names = "--chat", description = "Wrap the prompt in the model's chat template.")
  boolean chat;

  @picocli.CommandLine.Mixin EngineOptions engine = new EngineOptions();

  @picocli.CommandLine.Mixin SpeculativeOptions speculative = new SpeculativeOptions();

  @Option(names = "--json", description = "Print one JSON object instead of streaming text.")
  boolean json;

  @Option(
      names = "--dump-logits",
      paramLabel = "FILE.npy",
      description =
          "Write every step's logits (the prompt's last position, then each decode step) as a"
              + " NumPy float32 array of shape (steps, vocab); see compare-logits.")
  Path dumpLogits;

  @Option(
      names = "--force-ids",
      split = ",",
      paramLabel = "IDS",
      description =
          "Teacher forcing: after step i feed IDS[i] instead of the sampled token (one id per new"
              + " token, as many as --max-new-tokens), e.g. a reference run's output_ids.")
  int[] forceIds;

  @Override
  public Integer call() throws Exception {
    engine.tuning(); // check the kernel options before reading any model file
    engine.validate();
    Path dir = DefaultModel.resolve(model);
    if (engine.follower()) {
      return engine.follow(dir); // node 0 generates; this node runs its ranks
    }
    if ((prompt == null) == (promptIds == null)) {
      throw new UserError("give either a prompt text or --prompt-ids (exactly one)");
    }
    FlagChecks.atLeast("--max-new-tokens", maxNewTokens, 1);
    FlagChecks.temperature(temperature);
    FlagChecks.topP(topP);
    FlagChecks.atLeast("--top-k", topK, 0);
    FlagChecks.writableFile("--dump-logits", dumpLogits);
    if (promptIds != null) {
      if (promptIds.length == 0) {
        throw new UserError("--prompt-ids is empty");
      }
      for (int id : promptIds) {
        FlagChecks.atLeast("--prompt-ids", id, 0);
      }
      FlagChecks.fitsContext(
          dir, "--prompt-ids plus --max-new-tokens", (long) promptIds.length + maxNewTokens);
    }
    if (forceIds != null && forceIds.length != maxNewTokens) {
      throw new UserError(
          "--force-ids has "
              + forceIds.length
              + " ids but --max-new-tokens is "
              + maxNewTokens
              + ": give one id per new token");
    }
    speculative.validate(dir);
    speculative.checkBackend(engine);
    engine.warmupVerifyTokens = speculative.verifyTokens();
    if (speculative.enabled() && (dumpLogits != null || forceIds != null)) {
      throw new UserError(
          (dumpLogits != null ? "--dump-logits" : "--force-ids")
              + " sees one decode step per token and cannot be combined with"
              + " --speculative-algorithm; drop one of them");
    }
    Tokenizer tok = null;
    if (prompt != null || !json || Files.exists(dir.resolve("tokenizer.json"))) {
      tok = Tokenizer.load(dir);
    }
    int[] ids = promptIds;
    if (ids == null) {
      String text = prompt;
      if (chat) {
        ChatTemplate template =
            tok.chatTemplate()
                .orElseThrow(
                    () -> new UserError(dir + ": tokenizer_config.json has no chat_template"));
        text = template.render(List.of(new ChatMessage("user", prompt)), true);
        ids = tok.encode(text, false);
      } else {
        ids = tok.encode(text);
      }
    } else if (chat) {
      throw new UserError("--chat needs a prompt text, not --prompt-ids");
    }
    FlagChecks.fitsContext(
        dir, "the prompt plus --max-new-tokens", (long) ids.length + maxNewTokens);
    if (speculative.draftDir() != null) {
      FlagChecks.fitsContext(
          speculative.draftDir(),
          "the prompt plus --max-new-tokens (for the draft model)",
          (long) ids.length + maxNewTokens);
    }
    GenerationDefaults defaults = GenerationDefaults.of(dir);
    SamplingParams params =
        new SamplingParams(
            temperature != null ? temperature : defaults.temperature(),
            topP != null ? topP : defaults.topP(),
            topK != null ? topK : defaults.topK(),
            seed,
            maxNewTokens,
            ignoreEos,
            List.of());
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    try (LanguageModel lm = engine.open(dir)) {
      System.err.printf(
          "model: %s (%s, %d layers, %.1f MB of weights); KV cache: %d bytes per token%n",
          dir,
          lm.config().architecture().modelType(),
          lm.config().numLayers(),
          lm.weightBytes() / 1048576.0,
          lm.kvBytesPerToken());
      int[] eos = tok != null ? tok.eosIds() : toArray(lm.config().eosTokenIds());
      StreamDecoder stream = tok != null ? tok.newStreamDecoder(true) : null;
      StepRecorder steps = new StepRecorder(lm.config().vocabSize(), forceIds, dumpLogits != null);
      if (!json && prompt != null && !chat) {
        out.print(prompt);
      }
      final Tokenizer tokenizer = tok;
      IntPredicate onToken =
          id -> {
            if (!json) {
              if (stream != null) {
                out.print(stream.next(id));
              } else {
                out.print(id + " ");
              }
              out.flush();
            }
            return true;
          };
      SpeculativeResult spec = null;
      GenerationResult r;
      if (speculative.enabled()) {
        try (LanguageModel draft = speculative.openDraft(engine.tuning());
            DraftHead head = speculative.openHead(lm)) {
          spec =
              new SpeculativeGenerator(lm, speculative.config(), draft, head)
                  .generate(ids, params, eos, onToken);
        } catch (IllegalArgumentException e) {
          throw new UserError(e.getMessage());
        }
        r = spec.generation();
      } else {
        r = new Generator(lm).generate(ids, params, eos, onToken, steps);
      }
      if (dumpLogits != null) {
        steps.writeLogits(dumpLogits);
      }
      if (json) {
        ObjectMapper m = new ObjectMapper();
        ObjectNode o = m.createObjectNode();
        o.putPOJO("prompt_ids", r.promptIds());
        o.putPOJO("output_ids", r.outputIds());
        o.putPOJO("argmax_ids", steps.argmaxIds());
        o.put("text", tokenizer != null ? tokenizer.decode(r.outputIds(), true) : null);
        o.put("finish_reason", r.finishReason());
        o.put("prefill_ms", r.prefillMs());
        o.put("prefill_tokens_per_s", r.prefillTokensPerSecond());
        o.put("decode_tokens_per_s", r.decodeTokensPerSecond());
        o.put("model", dir.toString());
        o.set("kernel_tuning", m.valueToTree(engine.tuning().toMap()));
        if (spec != null) {
          o.set("speculative", m.valueToTree(speculative.toMap(spec)));
        }
        out.println(m.writeValueAsString(o));
      } else {
        if (stream != null) {
          out.print(stream.flush());
        }
        out.println();
        System.err.printf(
            "[%d prompt tokens, prefill %.0f ms; %d new tokens, %.1f tok/s decode; finish: %s]%n",
            r.promptIds().length,
            r.prefillMs(),
            r.outputIds().length,
            r.decodeTokensPerSecond(),
            r.finishReason());
        if (spec != null) {
          System.err.println(speculative.summary(spec));
        }
      }
      if (dumpLogits != null) {
        System.err.printf("[logits of %d steps written to %s]%n", r.outputIds().length, dumpLogits);
      }
    }
    return 0;
  }

  private static int[] toArray(List<Integer> l) {
    return l.stream().mapToInt(Integer::intValue).toArray();
  }
}
