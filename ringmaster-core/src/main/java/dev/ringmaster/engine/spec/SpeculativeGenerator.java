package dev.ringmaster.engine.spec;

import dev.ringmaster.engine.GenerationResult;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.HiddenLogits;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.NextnLayer;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.function.IntPredicate;

/**
 * Generates one sequence with speculative decoding: one prefill forward over the prompt, then per
 * step a draft of up to {@code k} tokens, one target forward over the last accepted token and the
 * draft ({@code k + 1} logit rows), {@link DraftVerifier}'s decision, and a rollback of the
 * target's KV cache to the accepted length ({@link KvCache#setLength}; the drafter rolls its own
 * back). The target's cache always holds the context but its newest token, as in {@link
 * dev.ringmaster.engine.Generator}. Each emitted token is handed to the listener as it is decided.
 */
public final class SpeculativeGenerator {
  private final LanguageModel target;
  private final LanguageModel draftModel;
  private final DraftHead draftHead;
  private final SpeculativeConfig config;

  /**
   * A generator over {@code target} without an EAGLE-3 head.
   *
   * @param draftModel the draft model for {@link SpeculativeAlgorithm#STANDALONE} (else null)
   * @throws IllegalArgumentException when the draft model is missing, given for n-gram or NEXTN
   *     drafts, or has another vocabulary size than the target, or NEXTN finds no MTP layer
   */
  public SpeculativeGenerator(
      LanguageModel target, SpeculativeConfig config, LanguageModel draftModel) {
    this(target, config, draftModel, null);
  }

  /**
   * A generator over {@code target}.
   *
   * @param draftModel the draft model for {@link SpeculativeAlgorithm#STANDALONE} (else null)
   * @param draftHead the head for {@link SpeculativeAlgorithm#EAGLE3} (else null), loaded over
   *     {@code target} ({@link LanguageModel#loadEagle3Head}); the caller closes it
   * @throws IllegalArgumentException when the draft model or head is missing, or given for an
   *     algorithm that uses none, or the draft model has another vocabulary size than the target,
   *     or NEXTN finds no MTP layer
   */
  public SpeculativeGenerator(
      LanguageModel target,
      SpeculativeConfig config,
      LanguageModel draftModel,
      DraftHead draftHead) {
    this.target = target;
    this.config = config;
    this.draftModel = draftModel;
    this.draftHead = draftHead;
    requireHead(config.algorithm(), draftHead);
    boolean needsModel = config.algorithm() == SpeculativeAlgorithm.STANDALONE;
    if (needsModel && draftModel == null) {
      throw new IllegalArgumentException("STANDALONE speculation needs a draft model");
    }
    if (!needsModel && draftModel != null) {
      throw new IllegalArgumentException(
          config.algorithm() + " speculation uses no draft model, but one was given");
    }
    if (config.algorithm() == SpeculativeAlgorithm.NEXTN) {
      requireNextn(target);
    }
    if (draftModel != null && draftModel.config().vocabSize() != target.config().vocabSize()) {
      throw new IllegalArgumentException(
          "the draft model's vocabulary has "
              + draftModel.config().vocabSize()
              + " tokens but the target's has "
              + target.config().vocabSize()
              + ": a draft model must share the target's tokenizer");
    }
  }

  /**
   * Generates from {@code prompt}.
   *
   * @param prompt prompt token ids (at least one)
   * @param params sampling and stopping (no penalties)
   * @param eosIds end-of-sequence tokens (ignored with {@code ignoreEos})
   * @param onToken called with each new token; returning false stops generation
   */
  public SpeculativeResult generate(
      int[] prompt, SamplingParams params, int[] eosIds, IntPredicate onToken) {
    ModelConfig cfg = target.config();
    int vocab = cfg.vocabSize();
    checkPrompt(prompt, params, cfg);
    if (draftModel != null) {
      int draftContext = draftModel.config().maxPositionEmbeddings();
      if (prompt.length + params.maxNewTokens() > draftContext) {
        throw new IllegalArgumentException(
            "prompt plus max new tokens ("
                + (prompt.length + params.maxNewTokens())
                + ") exceeds the draft model's context of "
                + draftContext
                + " tokens");
      }
    }
    RowDistribution rule = RowDistribution.of(params, vocab);
    DraftVerifier verifier = new DraftVerifier(rule, vocab);
    Set<Integer> stops = new HashSet<>(params.stopTokenIds());
    if (!params.ignoreEos()) {
      for (int e : eosIds) {
        stops.add(e);
      }
    }
    int maxNew = params.maxNewTokens();
    if (maxNew == 0) {
      return new SpeculativeResult(
          new GenerationResult(prompt, new int[0], "length", 0, 0),
          new SpeculationStats(0, 0, 0, 0));
    }
    int[] context = Arrays.copyOf(prompt, prompt.length + maxNew);
    int length = prompt.length;
    int produced = 0;
    String finish = "length";
    long verifySteps = 0;
    long draftTokens = 0;
    long accepted = 0;
    long draftNanos = 0;
    long t0 = System.nanoTime();
    long t1;
    long t2;
    try (KvCache cache = target.newCache();
        Drafter drafter = newDrafter(rule)) {
      float[] logits =
          forward(
              drafter,
              prompt,
              BatchLayout.single(prompt.length, 0),
              cache,
              new int[] {prompt.length - 1},
              prompt.length);
      int[] fresh = {verifier.verify(Draft.EMPTY, logits, 0).token()};
      int freshCount = 1;
      t1 = System.nanoTime();
      emit:
      while (true) {
        for (int j = 0; j < freshCount; j++) {
          int token = fresh[j];
          context[length++] = token;
          produced++;
          boolean keepGoing = onToken.test(token);
          if (stops.contains(token)) {
            finish = "stop";
            break emit;
          }
          if (!keepGoing || produced == maxNew) {
            break emit;
          }
        }
        // A verify pass yields up to k + 1 tokens: never draft past the token budget.
        int k = Math.min(config.numDraftTokens(), maxNew - produced - 1);
        long d0 = System.nanoTime();
        Draft draft = k > 0 ? drafter.propose(context, length, k) : Draft.EMPTY;
        draftNanos += System.nanoTime() - d0;
        int n = draft.length();
        int[] tokens = new int[n + 1];
        tokens[0] = context[length - 1];
        System.arraycopy(draft.tokens(), 0, tokens, 1, n);
        int[] rows = new int[n + 1];
        for (int i = 0; i <= n; i++) {
          rows[i] = i;
        }
        int start = cache.length();
        // The rows of the last token and the drafts: their hidden states are final once accepted.
        float[][] hidden = new float[1][];
        DraftVerifier.Outcome outcome;
        if (verifier.argmaxOnly() && !drafter.needsHidden()) {
          // Greedy: the backend takes each row's argmax where the logits are (on a GPU, only
          // k + 1 token ids come back), as a plain greedy decode step does.
          int[] argmax =
              target.forwardGreedy(
                  tokens, BatchLayout.single(n + 1, start), new KvCache[] {cache}, rows);
          outcome = verifier.verifyArgmax(draft, argmax, 0);
        } else {
          logits = forward(drafter, tokens, BatchLayout.single(n + 1, start), cache, rows, hidden);
          outcome = verifier.verify(draft, logits, produced);
        }
        if (hidden[0] != null) {
          drafter.observeHidden(start, hidden[0], 0, 1 + outcome.accepted());
        }
        // Keep the last token and the accepted drafts; the rejected ones' slots are reused.
        cache.setLength(start + 1 + outcome.accepted());
        verifySteps++;
        draftTokens += n;
        accepted += outcome.accepted();
        fresh = Arrays.copyOf(draft.tokens(), outcome.accepted() + 1);
        fresh[outcome.accepted()] = outcome.token();
        freshCount = fresh.length;
      }
      t2 = System.nanoTime();
    }
    return new SpeculativeResult(
        new GenerationResult(
            prompt,
            Arrays.copyOfRange(context, prompt.length, length),
            finish,
            (t1 - t0) / 1e6,
            (t2 - t1) / 1e6),
        new SpeculationStats(verifySteps, draftTokens, accepted, draftNanos / 1e6));
  }

  /** The prefill forward: hands every prompt row's hidden state to a drafter that needs them. */
  private float[] forward(
      Drafter drafter, int[] tokens, BatchLayout layout, KvCache cache, int[] rows, int seen) {
    if (!drafter.needsHidden()) {
      return target.forward(tokens, layout, new KvCache[] {cache}, rows);
    }
    int start = cache.length();
    HiddenLogits out =
        target.forwardHidden(tokens, layout, new KvCache[] {cache}, rows, drafter.hiddenCapture());
    drafter.observeHidden(start, out.hidden(), 0, seen);
    return out.logits();
  }

  /**
   * A verify forward: returns the hidden states in {@code hidden[0]} when the drafter needs them.
   */
  private float[] forward(
      Drafter drafter,
      int[] tokens,
      BatchLayout layout,
      KvCache cache,
      int[] rows,
      float[][] hidden) {
    if (!drafter.needsHidden()) {
      return target.forward(tokens, layout, new KvCache[] {cache}, rows);
    }
    HiddenLogits out =
        target.forwardHidden(tokens, layout, new KvCache[] {cache}, rows, drafter.hiddenCapture());
    hidden[0] = out.hidden();
    return out.logits();
  }

  /**
   * The target's MTP layer, or an error that says why there is none: the config declares no MTP
   * layer, or the checkpoint or backend lacks it.
   */
  public static NextnLayer requireNextn(LanguageModel target) {
    return target
        .nextnLayer()
        .orElseThrow(
            () ->
                new IllegalArgumentException(
                    target.config().numNextnPredictLayers() == 0
                        ? "NEXTN speculation needs the model's own MTP layer, but its config has"
                            + " num_nextn_predict_layers 0: use NGRAM or STANDALONE"
                        : "NEXTN speculation needs the model's MTP layer: the checkpoint has no"
                            + " model.layers."
                            + target.config().numLayers()
                            + ".eh_proj.weight, or this backend or parallel layout does not run"
                            + " it (it runs on a single-rank model, the CPU or one GPU: use"
                            + " --tp-size 1 --ep-size 1, or NGRAM)"));
  }

  /**
   * Checks that an EAGLE-3 head is given exactly when {@code algorithm} is {@link
   * SpeculativeAlgorithm#EAGLE3}.
   */
  public static void requireHead(SpeculativeAlgorithm algorithm, DraftHead head) {
    boolean needsHead = algorithm == SpeculativeAlgorithm.EAGLE3;
    if (needsHead && head == null) {
      throw new IllegalArgumentException(
          "EAGLE3 speculation needs an EAGLE-3 head: pass --speculative-draft-model-path DIR");
    }
    if (!needsHead && head != null) {
      throw new IllegalArgumentException(
          algorithm + " speculation uses no EAGLE-3 head, but one was given");
    }
  }

  private Drafter newDrafter(RowDistribution rule) {
    return switch (config.algorithm()) {
      case NGRAM -> new NgramDrafter(config.ngramMinMatch(), config.ngramMaxMatch());
      case NEXTN -> new HiddenStateDrafter(requireNextn(target), rule);
      case EAGLE3 -> new HiddenStateDrafter(draftHead, rule);
      case STANDALONE ->
          new ModelDrafter(
              draftModel, RowDistribution.of(rule.params(), draftModel.config().vocabSize()));
    };
  }

  private static void checkPrompt(int[] prompt, SamplingParams params, ModelConfig cfg) {
    int vocab = cfg.vocabSize();
    if (prompt.length == 0) {
      throw new IllegalArgumentException("the prompt is empty: give at least one token");
    }
    for (int id : prompt) {
      if (id < 0 || id >= vocab) {
        throw new IllegalArgumentException(
            "prompt token id " + id + " is outside the vocabulary (0.." + (vocab - 1) + ")");
      }
    }
    if (prompt.length + params.maxNewTokens() > cfg.maxPositionEmbeddings()) {
      throw new IllegalArgumentException(
          "prompt ("
              + prompt.length
              + " tokens) plus max new tokens ("
              + params.maxNewTokens()
              + ") exceeds the model's context of "
              + cfg.maxPositionEmbeddings()
              + " tokens");
    }
  }
}
