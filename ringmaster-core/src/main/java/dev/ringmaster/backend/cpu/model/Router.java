package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.model.config.MoeConfig;

/**
 * Chooses each token's experts and their weights, as transformers' routers do: router logits in
 * f32; softmax (DeepSeek-V2, Qwen3) or sigmoid plus correction bias for the choice only
 * (DeepSeek-V3); plain, group-limited (best expert per group) or noaux_tc (sum of the two best per
 * group) selection; optional renormalisation; routed scaling factor.
 */
public final class Router {
  private final MoeConfig cfg;
  private final CpuMatrix gate;
  private final float[] correctionBias;
  private final CpuKernelContext kernels;

  /**
   * A router with gate weight {@code [experts, hidden]} and optional correction bias, whose logits
   * are computed on {@code kernels}.
   */
  public Router(CpuKernelContext kernels, MoeConfig cfg, CpuMatrix gate, float[] correctionBias) {
    this.kernels = kernels;
    this.cfg = cfg;
    this.gate = gate;
    this.correctionBias = correctionBias;
  }

  /**
   * Routes {@code n} tokens.
   *
   * @param x normalised hidden states {@code [n, hidden]}
   * @param n tokens
   * @param experts out: chosen expert ids {@code [n, topK]}
   * @param weights out: their weights {@code [n, topK]}
   */
  public void route(float[] x, int n, int[] experts, float[] weights) {
    int e = cfg.numExperts();
    int k = cfg.topK();
    float[] logits = new float[n * e];
    CpuMatmul.matmul(kernels, logits, x, n, gate);
    float[] scores = new float[e];
    float[] choice = new float[e];
    for (int t = 0; t < n; t++) {
      System.arraycopy(logits, t * e, scores, 0, e);
      if (cfg.scoring() == MoeConfig.Scoring.SOFTMAX) {
        CpuOps.softmax(scores, 0, e);
      } else {
        for (int i = 0; i < e; i++) {
          scores[i] = (float) (1.0 / (1.0 + Math.exp(-scores[i])));
        }
      }
      for (int i = 0; i < e; i++) {
        choice[i] = correctionBias != null ? scores[i] + correctionBias[i] : scores[i];
      }
      switch (cfg.selection()) {
        case GROUP_LIMITED_GREEDY -> maskGroups(choice, false, 0f);
        case NOAUX_TC -> maskGroups(choice, true, Float.NEGATIVE_INFINITY);
        case GREEDY -> {}
      }
      float sum = 0;
      for (int j = 0; j < k; j++) {
        int best = -1;
        for (int i = 0; i < e; i++) {
          if (!chosen(experts, t * k, j, i) && (best < 0 || choice[i] > choice[best])) {
            best = i;
          }
        }
        experts[t * k + j] = best;
        // noaux_tc weights come from the unbiased scores; otherwise the (masked) choice is the
        // score.
        float w = cfg.selection() == MoeConfig.Selection.NOAUX_TC ? scores[best] : choice[best];
        weights[t * k + j] = w;
        sum += w;
      }
      if (cfg.normTopKProb()) {
        float denom = cfg.scoring() == MoeConfig.Scoring.SIGMOID ? sum + 1e-20f : sum;
        for (int j = 0; j < k; j++) {
          weights[t * k + j] /= denom;
        }
      }
      float scaling = (float) cfg.routedScalingFactor();
      if (scaling != 1f) {
        for (int j = 0; j < k; j++) {
          weights[t * k + j] *= scaling;
        }
      }
    }
  }

  private static boolean chosen(int[] experts, int base, int count, int expert) {
    for (int j = 0; j < count; j++) {
      if (experts[base + j] == expert) {
        return true;
      }
    }
    return false;
  }

  /**
   * Keeps the best {@code topKGroups} groups and sets the other experts' choice to {@code fill}.
   */
  private void maskGroups(float[] choice, boolean sumTopTwo, float fill) {
    int groups = cfg.numGroups();
    int per = cfg.numExperts() / groups;
    float[] groupScore = new float[groups];
    for (int g = 0; g < groups; g++) {
      float best = Float.NEGATIVE_INFINITY;
      float second = Float.NEGATIVE_INFINITY;
      for (int i = g * per; i < (g + 1) * per; i++) {
        float v = choice[i];
        if (v > best) {
          second = best;
          best = v;
        } else if (v > second) {
          second = v;
        }
      }
      groupScore[g] = sumTopTwo ? best + (per > 1 ? second : 0f) : best;
    }
    boolean[] keep = new boolean[groups];
    for (int j = 0; j < cfg.topKGroups(); j++) {
      int bestG = -1;
      for (int g = 0; g < groups; g++) {
        if (!keep[g] && (bestG < 0 || groupScore[g] > groupScore[bestG])) {
          bestG = g;
        }
      }
      keep[bestG] = true;
    }
    for (int g = 0; g < groups; g++) {
      if (!keep[g]) {
        for (int i = g * per; i < (g + 1) * per; i++) {
          choice[i] = fill;
        }
      }
    }
  }
}
