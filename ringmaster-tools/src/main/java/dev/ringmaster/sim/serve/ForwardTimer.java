package dev.ringmaster.sim.serve;

import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.CollectiveModel;
import dev.ringmaster.sim.hw.CollectiveTime;
import dev.ringmaster.sim.hw.GpuSpec;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.Category;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.OpCost;
import dev.ringmaster.sim.model.StepOps;
import dev.ringmaster.sim.model.StepShape;
import dev.ringmaster.sim.model.WeightInventory;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Times one forward pass on one rank: each operator takes the longer of its compute time and its
 * memory time (roofline, with the profile's efficiencies), collectives take the collective model's
 * time, kernels add launch cost (host launch each, or graph-node cost inside a CUDA graph), and
 * every step pays the host overhead. Operators and collectives run one after another, as a decode
 * step's dependency chain does. Decode forwards add the profile's per-token, per-layer latency
 * ({@link Category#TOKEN_LATENCY}), which calibration fits where kernels fall behind the roofline
 * as the batch grows. An eager forward's collectives each wait for the last rank's launch ({@link
 * dev.ringmaster.sim.hw.CollectiveSpec#eagerSkewUs}).
 */
public final class ForwardTimer {
  /** Kernels the engine's all-to-all adds per MoE layer beside its collectives. */
  static final int ENGINE_A2A_KERNELS = 3;

  private final HardwareProfile hw;
  private final CollectiveModel collectives;

  /** Timer for a profile. */
  public ForwardTimer(HardwareProfile hw) {
    this.hw = hw;
    this.collectives = new CollectiveModel(hw);
  }

  /** Microseconds one operator takes on one GPU. */
  public static double opTimeUs(GpuSpec g, OpCost op) {
    return opTimeUs(g, op, g.computeEfficiency());
  }

  /** Microseconds one operator takes at {@code computeEfficiency} of the tensor rate. */
  public static double opTimeUs(GpuSpec g, OpCost op, double computeEfficiency) {
    double memEff =
        switch (op.kind()) {
          case ATTENTION -> g.attentionMemoryEfficiency();
          case GEMM ->
              op.category() == Category.MOE ? g.moeMemoryEfficiency() : g.gemmMemoryEfficiency();
          case MISC -> g.gemmMemoryEfficiency();
        };
    double memory = op.bytes() / (g.memoryBandwidth() * memEff);
    double compute = op.flops() / (g.flopsFor(op.computeDtype()) * computeEfficiency);
    return Math.max(memory, compute) * 1e6;
  }

  /**
   * One forward of {@code model} (the target, an MTP layer or a draft head) for {@code step}.
   *
   * @param graphed whether this forward replays a CUDA graph
   */
  public ForwardTime time(
      WeightInventory model, ServingConfig cfg, StepShape step, boolean graphed) {
    StepOps ops = new StepOps(model, cfg.quant(), cfg.sharding());
    List<OpCost> list = ops.forward(step);
    Map<Category, Double> bd = new EnumMap<>(Category.class);
    for (Category c : Category.values()) {
      bd.put(c, 0.0);
    }
    List<Double> times = new ArrayList<>();
    int kernels = 0;
    for (OpCost op : list) {
      double t =
          opTimeUs(
              hw.gpu(),
              op,
              step.absorbedMla() ? hw.gpu().computeEfficiency() : hw.gpu().prefillEfficiency());
      times.add(t);
      bd.merge(op.category(), t, Double::sum);
      kernels += op.kernels();
    }
    List<CollectiveCall> calls = collectives(model.shape(), cfg, step);
    if (!graphed) {
      calls = withEagerSkew(calls, hw.collectives().eagerSkewUs(cfg.tp()));
    }
    double comm = 0;
    for (CollectiveCall c : calls) {
      comm += c.count() * c.timeUsEach();
      kernels += c.count();
    }
    if (dispatches(model.shape(), cfg) && cfg.a2a() == A2aBackend.ALL_TO_ALL) {
      // the engine packs, unpacks and combines the blocks in three small kernels per MoE layer
      kernels += ENGINE_A2A_KERNELS * model.shape().moeLayerCount();
    }
    bd.put(Category.COLLECTIVES, comm);
    GpuSpec g = hw.gpu();
    if (step.absorbedMla()) {
      bd.put(
          Category.TOKEN_LATENCY,
          g.decodeLatencyUs(step.tokens(), step.contextLen(), model.shape().numLayers()));
    }
    double launch =
        graphed ? g.graphLaunchUs() + kernels * g.graphNodeUs() : kernels * g.kernelLaunchUs();
    bd.put(Category.LAUNCH_OTHER, launch);
    double total = bd.values().stream().mapToDouble(Double::doubleValue).sum();
    return new ForwardTime(total, bd, list, times, calls, kernels);
  }

  /**
   * Eagerly launched collectives: each also waits for the last rank's host to launch it (a captured
   * graph launched them all at once, so the ranks meet only at the data).
   */
  private static List<CollectiveCall> withEagerSkew(List<CollectiveCall> calls, double skewUs) {
    if (skewUs <= 0) {
      return calls;
    }
    List<CollectiveCall> out = new ArrayList<>();
    for (CollectiveCall c : calls) {
      out.add(
          new CollectiveCall(
              c.where(),
              c.op(),
              c.count(),
              c.bytes(),
              c.algorithm() + String.format(" + %.0f us eager launch skew", skewUs),
              c.timeUsEach() + skewUs));
    }
    return out;
  }

  /** Collectives one forward issues on each rank. */
  public List<CollectiveCall> collectives(ModelShape s, ServingConfig cfg, StepShape step) {
    List<CollectiveCall> out = new ArrayList<>();
    int tp = cfg.tp();
    if (tp <= 1) {
      return out;
    }
    double hiddenBytes = 2.0 * step.tokens() * s.hiddenSize();
    AllreduceAlgorithm algo = effectiveAllreduce(cfg);
    CollectiveTime ar = collectives.allreduce(algo, hiddenBytes, tp);
    int layers = s.numLayers();
    int moeLayers = s.moeLayerCount();
    boolean a2a = dispatches(s, cfg);
    out.add(
        new CollectiveCall(
            "embedding (vocab-parallel)", "allreduce", 1, hiddenBytes, ar.how(), ar.timeUs()));
    out.add(
        new CollectiveCall(
            "attention output", "allreduce", layers, hiddenBytes, ar.how(), ar.timeUs()));
    int mlpAllreduces = a2a ? layers - moeLayers : layers;
    if (mlpAllreduces > 0) {
      out.add(
          new CollectiveCall(
              "MLP / MoE output", "allreduce", mlpAllreduces, hiddenBytes, ar.how(), ar.timeUs()));
    }
    if (a2a) {
      int ep = cfg.ep();
      int k = s.moe().topK();
      double hidden = s.hiddenSize();
      double dispatch;
      double combine;
      double regather;
      if (cfg.a2a() == A2aBackend.ALL_TO_ALL) {
        // the engine's blocks (bytes each rank sends, its own block included): one f32 row of
        // hidden + 2 topK per slice token to every peer, topK f32 rows back, f32 slices gathered
        double slice = Math.ceil((double) step.tokens() / ep);
        dispatch = 4.0 * ep * slice * (hidden + 2.0 * k);
        combine = 4.0 * ep * slice * k * hidden;
        regather = 4.0 * ep * slice * hidden;
      } else {
        // DeepEP-style: fp8 dispatch (values + one f32 scale per 128), bf16 combine
        double tokensPerRank = (double) step.tokens() / ep;
        dispatch = tokensPerRank * k * (hidden + 4.0 * hidden / 128);
        combine = tokensPerRank * k * 2.0 * hidden;
        regather = hiddenBytes;
      }
      CollectiveTime d = collectives.allToAll(dispatch, ep);
      CollectiveTime c = collectives.allToAll(combine, ep);
      CollectiveTime g = collectives.allGather(regather, tp);
      out.add(
          new CollectiveCall(
              "MoE dispatch", "all-to-all", moeLayers, dispatch, d.how(), d.timeUs()));
      out.add(
          new CollectiveCall("MoE combine", "all-to-all", moeLayers, combine, c.how(), c.timeUs()));
      out.add(
          new CollectiveCall(
              "MoE token regather", "allgather", moeLayers, regather, g.how(), g.timeUs()));
    }
    double logits = 2.0 * step.logitTokens() * s.vocabSize();
    CollectiveTime lg = collectives.allGather(logits, tp);
    out.add(new CollectiveCall("LM head logits", "allgather", 1, logits, lg.how(), lg.timeUs()));
    return out;
  }

  /** Whether MoE tokens travel to their experts' ranks in this configuration. */
  private static boolean dispatches(ModelShape s, ServingConfig cfg) {
    return cfg.a2a().dispatches() && cfg.ep() > 1 && s.moe() != null;
  }

  /** The allreduce actually used: a fused kernel the box lacks falls back to NCCL. */
  public AllreduceAlgorithm effectiveAllreduce(ServingConfig cfg) {
    if (cfg.allreduce() == AllreduceAlgorithm.FUSED && !hw.collectives().fusedAllreduce()) {
      return AllreduceAlgorithm.NCCL;
    }
    return cfg.allreduce();
  }
}
