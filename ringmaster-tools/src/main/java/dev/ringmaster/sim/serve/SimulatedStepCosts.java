package dev.ringmaster.sim.serve;

import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.StepShape;
import dev.ringmaster.sim.model.WeightInventory;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Step times from the simulator's forward model: a decode-only step is one decode forward (graphed
 * when the batch has a captured graph), a step with prompt tokens runs eagerly, its prefill chunks
 * and its decode rows timed as two forwards one after the other (the weights counted twice, small
 * beside a chunk's compute); each step pays the profile's step overhead. Contexts are rounded up to
 * 64 tokens and the times memoised.
 */
public final class SimulatedStepCosts implements StepCosts {
  private static final int CONTEXT_ROUNDING = 64;

  private final ForwardTimer timer;
  private final WeightInventory inv;
  private final ServingConfig cfg;
  private final double stepOverheadUs;
  private final Map<List<Integer>, Double> memo = new HashMap<>();

  /** Step costs of {@code inv} served as {@code cfg} on {@code hw}. */
  public SimulatedStepCosts(HardwareProfile hw, WeightInventory inv, ServingConfig cfg) {
    this.timer = new ForwardTimer(hw);
    this.inv = inv;
    this.cfg = cfg;
    this.stepOverheadUs = hw.gpu().stepOverheadUs();
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
    if (decodeRows > 0) {
      us +=
          timer
              .time(
                  inv,
                  cfg,
                  StepShape.decode(decodeRows, 1, Math.max(1, ctx), cfg.kvDtype()),
                  graphed && prefillTokens == 0)
              .totalUs();
    }
    if (prefillTokens > 0) {
      double chunk = (double) prefillTokens / prefillSeqs;
      StepShape prefill =
          new StepShape(
              prefillTokens,
              prefillSeqs,
              (int) Math.ceil(start + chunk),
              start + chunk / 2,
              prefillSeqs,
              cfg.kvDtype(),
              false);
      us += timer.time(inv, cfg, prefill, false).totalUs();
    }
    return us;
  }

  private static int roundUp(int tokens) {
    return (tokens + CONTEXT_ROUNDING - 1) / CONTEXT_ROUNDING * CONTEXT_ROUNDING;
  }
}
