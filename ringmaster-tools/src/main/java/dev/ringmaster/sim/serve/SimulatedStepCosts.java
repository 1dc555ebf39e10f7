package dev.ringmaster.sim.serve;

import dev.ringmaster.sim.hw.GpuSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.AttentionKind;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.StepShape;
import dev.ringmaster.sim.model.WeightInventory;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Step times from the simulator's forward model, step by step as the engine's GPU model runs them
 * ({@code CudaCausalLm}):
 *
 * <ul>
 *   <li>a decode-only step is one decode forward, replayed from a graph when its batch has one;
 *   <li>a step with prompt tokens runs eagerly, its decode rows first and its prompt tokens after,
 *       in forwards of at most {@link #maxForwardTokens} tokens (the activation buffers: the
 *       prefill chunk or the logits rows, whichever is larger); a forward reads the weights once
 *       for all its tokens, decode rows included;
 *   <li>a forward with prompt tokens runs MLA's absorbed query and output projections over the
 *       tokens that need them ({@link AbsorbedMlaTokens}: its decode rows, and prompt runs only
 *       where they take the absorbed form), at the profile's {@link GpuSpec#mlaAbsorbFlops};
 *   <li>each step pays the profile's step overhead.
 * </ul>
 *
 * Contexts are rounded up to 64 tokens and the times memoised.
 */
public final class SimulatedStepCosts implements StepCosts {
  private static final int CONTEXT_ROUNDING = 64;

  /** The engine's smallest logits buffer, in rows ({@code CudaCausalLm}: max(graph batch, 64)). */
  private static final int MIN_LOGIT_ROWS = 64;

  private final ForwardTimer timer;
  private final GpuSpec gpu;
  private final WeightInventory inv;
  private final ServingConfig cfg;
  private final double stepOverheadUs;
  private final int maxForwardTokens;
  private final AbsorbedMlaTokens absorbed;
  private final Map<List<Integer>, Double> memo = new HashMap<>();

  /** Step costs of {@code inv} served as {@code cfg} on {@code hw}. */
  public SimulatedStepCosts(HardwareProfile hw, WeightInventory inv, ServingConfig cfg) {
    this.timer = new ForwardTimer(hw);
    this.gpu = hw.gpu();
    this.inv = inv;
    this.cfg = cfg;
    this.stepOverheadUs = hw.gpu().stepOverheadUs();
    this.maxForwardTokens = maxForwardTokens(cfg);
    this.absorbed = new AbsorbedMlaTokens(inv.shape(), cfg.tp());
  }

  /**
   * Tokens one forward of the engine's GPU model takes at most: the activations hold the prefill
   * chunk or the logits rows (the largest captured decode batch, at least 64), whichever is more.
   */
  static int maxForwardTokens(ServingConfig cfg) {
    int graphMax =
        cfg.cudaGraph() ? CudaGraphSchedule.capturedSizes(cfg.cudaGraphMaxBs()).getLast() : 0;
    return Math.max(cfg.chunkedPrefill(), Math.max(graphMax, MIN_LOGIT_ROWS));
  }

  @Override
  public double stepUs(
      int decodeRows,
      int decodeContext,
      int prefillTokens,
      int prefillSequences,
      int prefillStart,
      boolean graphed) {
    int ctx = roundUp(decodeContext);
    int start = prefillTokens == 0 ? 0 : roundUp(prefillStart);
    List<Integer> key =
        List.of(decodeRows, ctx, prefillTokens, prefillSequences, start, graphed ? 1 : 0);
    return memo.computeIfAbsent(
        key, k -> compute(decodeRows, ctx, prefillTokens, prefillSequences, start, graphed));
  }

  private double compute(
      int decodeRows, int ctx, int prefillTokens, int prefillSeqs, int start, boolean graphed) {
    double us = stepOverheadUs;
    if (prefillTokens == 0) {
      return us
          + timer
              .time(
                  inv,
                  cfg,
                  StepShape.decode(decodeRows, 1, Math.max(1, ctx), cfg.kvDtype()),
                  graphed)
              .totalUs();
    }
    double chunk = (double) prefillTokens / prefillSeqs;
    int rowsLeft = decodeRows;
    int promptLeft = prefillTokens;
    while (rowsLeft + promptLeft > 0) {
      int rows = Math.min(rowsLeft, maxForwardTokens);
      int prompt = Math.min(promptLeft, maxForwardTokens - rows);
      // the prompts this forward touches: its share of the chunk, whole prompts where they fit
      int seqs = prompt == 0 ? 0 : Math.max(1, (int) Math.ceil(prompt / chunk));
      us += mixedForwardUs(rows, ctx, prompt, seqs, start, chunk);
      rowsLeft -= rows;
      promptLeft -= prompt;
    }
    return us;
  }

  /** One eager forward of {@code rows} decode rows and {@code prompt} prompt tokens. */
  private double mixedForwardUs(int rows, int ctx, int prompt, int seqs, int start, double chunk) {
    if (prompt == 0) {
      return timer
          .time(inv, cfg, StepShape.decode(rows, 1, Math.max(1, ctx), cfg.kvDtype()), false)
          .totalUs();
    }
    int chunkLen = (int) Math.ceil(Math.min(chunk, prompt));
    // decode rows counted as more one-token sequences of the forward: the weights and experts are
    // read once for all tokens, and each row reads its own cache
    StepShape shape =
        new StepShape(
            prompt + rows,
            seqs + rows,
            start + chunkLen,
            start + chunkLen / 2.0,
            seqs + rows,
            cfg.kvDtype(),
            false);
    double us = timer.time(inv, cfg, shape, false).totalUs();
    if (rows > 0) {
      us += gpu.decodeLatencyUs(rows, Math.max(1, ctx), inv.shape().numLayers());
    }
    return us
        + absorbedProjectionsUs(absorbed.count(rows, ctx, prompt, chunkLen, start + chunkLen));
  }

  /**
   * The absorbed query and output projections over {@code tokens} tokens of a forward: per token,
   * layer and rank {@code 2 heads nope kvLora + 2 heads kvLora v} FLOPs; 0 for models without MLA
   * and on profiles that have not measured the rate.
   */
  double absorbedProjectionsUs(int tokens) {
    ModelShape s = inv.shape();
    if (s.attention().kind() != AttentionKind.MLA || gpu.mlaAbsorbFlops() <= 0) {
      return 0;
    }
    ModelShape.AttentionShape a = s.attention();
    double heads = (double) a.numHeads() / cfg.tp();
    double perToken =
        2.0 * heads * a.kvLoraRank() * (a.qkNopeHeadDim() + a.vHeadDim()) * s.numLayers();
    return tokens * perToken / gpu.mlaAbsorbFlops() * 1e6;
  }

  private static int roundUp(int tokens) {
    return (tokens + CONTEXT_ROUNDING - 1) / CONTEXT_ROUNDING * CONTEXT_ROUNDING;
  }
}
