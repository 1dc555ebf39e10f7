package dev.ringmaster.cli;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.spec.SpeculationStats;
import dev.ringmaster.engine.spec.SpeculativeAlgorithm;
import dev.ringmaster.engine.spec.SpeculativeConfig;
import dev.ringmaster.engine.spec.SpeculativeResult;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.eagle.Eagle3HeadConfig;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.runtime.LanguageModel;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The {@code --speculative-*} flags of {@code generate} and {@code serve} (SGLang's names), checked
 * before any model loads.
 */
final class SpeculativeOptions {
  @Option(
      names = "--speculative-algorithm",
      paramLabel = "NGRAM|STANDALONE|NEXTN|EAGLE3",
      description =
          "Speculative decoding: NGRAM drafts from earlier context (no model), STANDALONE from a"
              + " small draft model with the same tokenizer, NEXTN (or MTP) from the checkpoint's own"
              + " multi-token-prediction layer, EAGLE3 from an EAGLE-3 head over the model's hidden"
              + " states; NEXTN and EAGLE3 on the CPU only (default: off).")
  String algorithm;

  @Option(
      names = "--speculative-num-draft-tokens",
      paramLabel = "K",
      description =
          "Draft tokens proposed per verify pass; the target checks K + 1 tokens in one forward"
              + " (default: "
              + SpeculativeConfig.DEFAULT_NUM_DRAFT_TOKENS
              + ").")
  Integer numDraftTokens;

  @Option(
      names = "--speculative-draft-model-path",
      paramLabel = "DIR",
      description =
          "Draft model directory for STANDALONE (default: the model's draft/ directory, which the"
              + " embedded model has), or the EAGLE-3 head directory for EAGLE3 (default: the model's"
              + " eagle3/ directory). Drafts run on the CPU.")
  Path draftModelPath;

  private SpeculativeConfig config;
  private Path draftDir;
  private Path headDir;

  /** Whether speculation was asked for. */
  boolean enabled() {
    return algorithm != null;
  }

  /**
   * Refuses, before anything loads, a drafter fed by the target's hidden states (NEXTN, EAGLE3) on
   * a layout that does not expose them: the single-rank models (CPU and one GPU) do, tensor- and
   * expert-parallel ranks and several nodes do not.
   */
  void checkBackend(EngineOptions engine) {
    if (algorithm == null) {
      return;
    }
    SpeculativeAlgorithm a = SpeculativeAlgorithm.parse(algorithm); // validate() checked the name
    if (a != SpeculativeAlgorithm.NEXTN && a != SpeculativeAlgorithm.EAGLE3) {
      return;
    }
    String where = null;
    if (engine.tpSize > 1 || engine.epSize > 1) {
      where = "with --tp-size / --ep-size above 1";
    } else if (engine.nodes.nnodes > 1) {
      where = "over several nodes";
    }
    if (where != null) {
      throw new UserError(
          "--speculative-algorithm "
              + a
              + " needs the target's hidden states, which only a single-rank model (the CPU or one"
              + " GPU) exposes, so it does not run "
              + where
              + ": leave --tp-size / --ep-size at 1, or use NGRAM or STANDALONE drafts");
    }
  }

  /**
   * Tokens of one sequence's verify pass, the drafts plus the last token, once {@link #validate}
   * has read the flags; 0 without speculation.
   */
  int verifyTokens() {
    return config == null ? 0 : config.numDraftTokens() + 1;
  }

  /**
   * Checks the flags against each other and the target model directory, and the draft model's
   * config and tokenizer against the target's, reading only small files.
   */
  void validate(Path targetDir) {
    if (algorithm == null) {
      if (numDraftTokens != null || draftModelPath != null) {
        throw new UserError(
            (numDraftTokens != null
                    ? "--speculative-num-draft-tokens"
                    : "--speculative-draft-model-path")
                + " needs --speculative-algorithm NGRAM, STANDALONE, NEXTN or EAGLE3");
      }
      return;
    }
    SpeculativeAlgorithm a;
    try {
      a = SpeculativeAlgorithm.parse(algorithm);
    } catch (IllegalArgumentException e) {
      throw new UserError("--speculative-algorithm: " + e.getMessage());
    }
    FlagChecks.atLeast("--speculative-num-draft-tokens", numDraftTokens, 1);
    config =
        SpeculativeConfig.of(
            a,
            numDraftTokens != null ? numDraftTokens : SpeculativeConfig.DEFAULT_NUM_DRAFT_TOKENS);
    boolean takesPath = a == SpeculativeAlgorithm.STANDALONE || a == SpeculativeAlgorithm.EAGLE3;
    if (!takesPath && draftModelPath != null) {
      throw new UserError(
          "--speculative-draft-model-path is for STANDALONE and EAGLE3; "
              + a
              + (a == SpeculativeAlgorithm.NGRAM
                  ? " drafts use no model"
                  : " drafts with the model's own MTP layer"));
    }
    if (a == SpeculativeAlgorithm.NGRAM) {
      return;
    }
    if (a == SpeculativeAlgorithm.EAGLE3) {
      validateHead(targetDir);
      return;
    }
    if (a == SpeculativeAlgorithm.NEXTN) {
      ModelConfig target = parse(targetDir, "the target model");
      if (target.numNextnPredictLayers() == 0) {
        throw new UserError(
            "--speculative-algorithm NEXTN needs the model's own MTP layer, but "
                + targetDir.resolve("config.json")
                + " has num_nextn_predict_layers 0: use NGRAM or STANDALONE");
      }
      return;
    }
    draftDir = draftModelPath != null ? draftModelPath : targetDir.resolve("draft");
    if (!Files.isDirectory(draftDir)) {
      throw new UserError(
          draftModelPath != null
              ? "--speculative-draft-model-path " + draftDir + ": not a model directory"
              : "--speculative-algorithm STANDALONE needs a draft model: "
                  + targetDir
                  + " has no draft/ directory; pass --speculative-draft-model-path DIR");
    }
    ModelConfig target = parse(targetDir, "the target model");
    ModelConfig draft = parse(draftDir, "the draft model");
    if (draft.vocabSize() != target.vocabSize()) {
      throw new UserError(
          "draft model "
              + draftDir
              + " has a vocabulary of "
              + draft.vocabSize()
              + " tokens but the target's has "
              + target.vocabSize()
              + ": a STANDALONE draft must use the target's tokenizer");
    }
    Path draftTok = draftDir.resolve("tokenizer.json");
    Path targetTok = targetDir.resolve("tokenizer.json");
    if (Files.exists(draftTok) && Files.exists(targetTok) && !sameBytes(draftTok, targetTok)) {
      throw new UserError(
          draftTok
              + " differs from "
              + targetTok
              + ": a STANDALONE draft must use the target's tokenizer (same tokenizer.json)");
    }
  }

  private void validateHead(Path targetDir) {
    headDir = draftModelPath != null ? draftModelPath : targetDir.resolve("eagle3");
    if (!Files.isDirectory(headDir)) {
      throw new UserError(
          draftModelPath != null
              ? "--speculative-draft-model-path " + headDir + ": not a directory"
              : "--speculative-algorithm EAGLE3 needs an EAGLE-3 head: "
                  + targetDir
                  + " has no eagle3/ directory; pass --speculative-draft-model-path DIR");
    }
    ModelConfig target = parse(targetDir, "the target model");
    try {
      Eagle3HeadConfig.parse(headDir).checkAgainst(target);
    } catch (RuntimeException e) {
      throw new UserError("EAGLE-3 head " + headDir + ": " + e.getMessage());
    }
  }

  /**
   * Loads the EAGLE-3 head (EAGLE3, after {@link #validate}) over {@code target}, else returns
   * null.
   */
  DraftHead openHead(LanguageModel target) {
    if (headDir == null) {
      return null;
    }
    try {
      return target.loadEagle3Head(headDir);
    } catch (RuntimeException e) {
      throw new UserError("EAGLE-3 head " + headDir + ": " + e.getMessage());
    }
  }

  /** The draft model directory (STANDALONE, after {@link #validate}), else null. */
  Path draftDir() {
    return draftDir;
  }

  /** The draft model (STANDALONE) or head (EAGLE3) directory after {@link #validate}, else null. */
  Path draftPath() {
    return draftDir != null ? draftDir : headDir;
  }

  /** The speculation settings (after {@link #validate}). */
  SpeculativeConfig config() {
    return config;
  }

  /**
   * Loads the draft model on the CPU (STANDALONE) with the run's CPU kernel settings, else returns
   * null.
   */
  LanguageModel openDraft(KernelTuning tuning) {
    return draftDir == null ? null : CausalLm.load(draftDir, tuning);
  }

  /** The line printed after generation. */
  String summary(SpeculativeResult r) {
    SpeculationStats s = r.stats();
    return String.format(
        "[speculative %s, %d draft tokens per verify: accept length %.2f (%d of %d draft tokens"
            + " accepted in %d verify passes), %.1f tok/s decode, drafting %.0f ms]",
        config.algorithm(),
        config.numDraftTokens(),
        s.acceptLength(),
        s.acceptedTokens(),
        s.draftTokens(),
        s.verifySteps(),
        r.generation().decodeTokensPerSecond(),
        s.draftMs());
  }

  /** The {@code speculative} object of {@code --json}. */
  Map<String, Object> toMap(SpeculativeResult r) {
    SpeculationStats s = r.stats();
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("algorithm", config.algorithm().name());
    m.put("num_draft_tokens", config.numDraftTokens());
    m.put("draft_model", draftPath() == null ? null : draftPath().toString());
    m.put("accept_length", s.acceptLength());
    m.put("accept_rate", s.acceptRate());
    m.put("verify_steps", s.verifySteps());
    m.put("draft_tokens", s.draftTokens());
    m.put("accepted_tokens", s.acceptedTokens());
    m.put("draft_ms", s.draftMs());
    return m;
  }

  private static ModelConfig parse(Path dir, String what) {
    try {
      return ModelConfigParser.parse(dir);
    } catch (RuntimeException e) {
      throw new UserError(what + " at " + dir + " has no readable config.json: " + e.getMessage());
    }
  }

  private static boolean sameBytes(Path a, Path b) {
    try {
      return Files.mismatch(a, b) == -1;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
