package dev.ringmaster.sim.serve;

import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.PeerFabricModel;
import dev.ringmaster.sim.model.Category;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.StepShape;
import dev.ringmaster.sim.model.WeightFormat;
import dev.ringmaster.sim.model.WeightInventory;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Predicts a serving configuration of a model on a hardware profile. */
public final class Simulator {
  /** Assumptions every prediction makes; printed with it. */
  public static final List<String> ASSUMPTIONS =
      List.of(
          "decode is a chain: operators and collectives do not overlap (no compute/communication"
              + " overlap)",
          "uniform routing: a step of T tokens touches E(1-(1-k/E)^T) distinct experts; no load"
              + " imbalance between expert-parallel ranks",
          "MLA under TP keeps the whole latent KV cache on every rank; the DSA indexer is"
              + " replicated on every rank",
          "kernels reach the profile's efficiencies at every size; activations are not counted as"
              + " memory traffic",
          "every captured CUDA graph keeps its own activations (graph memory grows with the sum of"
              + " captured batch sizes)");

  private final HardwareProfile hw;
  private final ForwardTimer timer;

  /** Simulator for a profile. */
  public Simulator(HardwareProfile hw) {
    this.hw = hw;
    this.timer = new ForwardTimer(hw);
  }

  /** The forward timer (for calibration and reports). */
  public ForwardTimer timer() {
    return timer;
  }

  /** Predicts decode (and prefill) of {@code cfg}. */
  public Prediction predict(ModelShape shape, ServingConfig cfg) {
    List<String> warnings = new ArrayList<>();
    List<String> blockers = new ArrayList<>();
    checkConfig(shape, cfg, warnings, blockers);
    WeightInventory inv = new WeightInventory(shape);
    MemoryPlan mem = MemoryPlanner.plan(inv, cfg, hw);
    if (!mem.fits()) {
      blockers.add(
          String.format(
              "out of memory (weights %.1f GB + activations %.1f GB + CUDA graphs %.1f GB +"
                  + " all-to-all buffers %.1f GB + reserved %.1f GB exceed the %.1f GB of one"
                  + " GPU)",
              mem.weightsBytes() / 1e9,
              mem.activationsBytes() / 1e9,
              mem.cudaGraphBytes() / 1e9,
              mem.a2aBufferBytes() / 1e9,
              mem.reservedBytes() / 1e9,
              mem.totalBytes() / 1e9));
    } else if (mem.maxBatchAtContext() < cfg.batch()) {
      blockers.add(
          String.format(
              "KV cache holds %d tokens: only %d sequences of %d tokens fit, batch %d does not",
              mem.kvCapacityTokens(), mem.maxBatchAtContext(), cfg.contextLen(), cfg.batch()));
    }
    int queries = cfg.spec() == null ? 1 : cfg.spec().numDraftTokens();
    boolean graphed = cfg.cudaGraph() && cfg.batch() <= cfg.cudaGraphMaxBs();
    if (cfg.cudaGraph() && !graphed) {
      warnings.add(
          "batch "
              + cfg.batch()
              + " exceeds --cuda-graph-max-bs "
              + cfg.cudaGraphMaxBs()
              + ": decode runs without graphs");
    }
    // a speculative cycle's forwards replay graphs only where the verify path is captured
    boolean targetGraphed = graphed && (cfg.spec() == null || cfg.spec().verifyGraphed());
    ForwardTime target =
        timer.time(
            inv,
            cfg,
            StepShape.decode(cfg.batch(), queries, cfg.contextLen(), cfg.kvDtype()),
            targetGraphed);
    double stepOverhead = hw.gpu().stepOverheadUs();
    Map<Category, Double> bd = new EnumMap<>(target.breakdownUs());
    bd.merge(Category.LAUNCH_OTHER, stepOverhead, Double::sum);
    double stepUs = target.totalUs() + stepOverhead;
    double tokensPerStep = 1;
    Prediction.SpecDetail spec = null;
    if (cfg.spec() != null) {
      SpecDecoding sp = cfg.spec();
      WeightInventory draft = new WeightInventory(DraftModels.draft(shape, sp.algorithm()));
      ForwardTime d =
          timer.time(
              draft,
              cfg,
              StepShape.decode(cfg.batch(), sp.topK(), cfg.contextLen(), cfg.kvDtype()),
              targetGraphed);
      ForwardTime ext =
          timer.time(
              draft,
              cfg,
              StepShape.decode(
                  cfg.batch(), (int) Math.ceil(sp.acceptLength()), cfg.contextLen(), cfg.kvDtype()),
              targetGraphed);
      bd = ForwardTime.add(bd, d.breakdownUs(), sp.numSteps());
      bd = ForwardTime.add(bd, ext.breakdownUs(), 1);
      stepUs += sp.numSteps() * d.totalUs() + ext.totalUs();
      tokensPerStep = sp.acceptLength();
      Prediction base = predict(shape, cfg.withSpec(null));
      double perStream = tokensPerStep / stepUs * 1e6;
      spec =
          new Prediction.SpecDetail(
              sp.numSteps() * d.totalUs() / 1000,
              target.totalUs() / 1000,
              ext.totalUs() / 1000,
              sp.acceptLength(),
              base.perStreamTokensPerS(),
              perStream / base.perStreamTokensPerS());
      if (perStream < base.perStreamTokensPerS()) {
        warnings.add(
            String.format(
                "speculative decoding is slower here: %.1f vs %.1f tok/s per stream without it",
                perStream, base.perStreamTokensPerS()));
      }
    }
    Map<String, Double> bdMs = new LinkedHashMap<>();
    Category dominant = Category.WEIGHTS;
    for (Category c : Category.values()) {
      double v = bd.getOrDefault(c, 0.0);
      bdMs.put(c.key(), v / 1000);
      if (v > bd.getOrDefault(dominant, 0.0)) {
        dominant = c;
      }
    }
    double perTokenMs = stepUs / 1000 / tokensPerStep;
    double perStream = 1000 / perTokenMs;
    return new Prediction(
        shape.modelType() + " (" + shape.numLayers() + " layers)",
        hw.name(),
        configMap(cfg),
        stepUs / 1000,
        perTokenMs,
        perStream,
        perStream * cfg.batch(),
        bdMs,
        dominant.key(),
        target.collectives(),
        mem.kvCapacityTokens(),
        mem.maxBatchAtContext(),
        mem,
        prefillMs(inv, cfg),
        spec,
        List.copyOf(blockers),
        List.copyOf(warnings),
        ASSUMPTIONS);
  }

  /** Time to prefill one prompt of {@code contextLen} tokens in chunks (no graphs). */
  public double prefillMs(WeightInventory inv, ServingConfig cfg) {
    double us = 0;
    int done = 0;
    while (done < cfg.contextLen()) {
      int chunk = Math.min(cfg.chunkedPrefill(), cfg.contextLen() - done);
      us += timer.time(inv, cfg, StepShape.prefill(chunk, done, cfg.kvDtype()), false).totalUs();
      us += hw.gpu().stepOverheadUs();
      done += chunk;
    }
    return us / 1000;
  }

  private void checkConfig(
      ModelShape s, ServingConfig cfg, List<String> warnings, List<String> blockers) {
    if (cfg.tp() > hw.gpuCount()) {
      throw new IllegalArgumentException(
          "--tp-size " + cfg.tp() + " exceeds the " + hw.gpuCount() + " GPUs of " + hw.name());
    }
    if (s.moe() != null && s.moe().numExperts() % cfg.ep() != 0) {
      throw new IllegalArgumentException(
          "--ep-size " + cfg.ep() + " must divide the " + s.moe().numExperts() + " experts");
    }
    if (cfg.allreduce() == AllreduceAlgorithm.FUSED
        && cfg.tp() > 1
        && !hw.collectives().fusedAllreduce()) {
      blockers.add(
          "fused allreduce not supported on "
              + hw.gpu().arch()
              + ": "
              + hw.collectives().fusedAllreduceNote()
              + "; use --allreduce nccl");
    }
    boolean peerKernel =
        cfg.allreduce() == AllreduceAlgorithm.ONESHOT
            || cfg.allreduce() == AllreduceAlgorithm.TWOSHOT
            || cfg.allreduce() == AllreduceAlgorithm.FUSED;
    if (peerKernel
        && cfg.tp() > 1
        && !hw.interconnect().nvlink()
        && hw.interconnect().pcieFabric() != null
        && !new PeerFabricModel(hw.interconnect()).directPeerAccess(cfg.tp())) {
      blockers.add(
          "--allreduce "
              + cfg.allreduce().cliName()
              + " loads from peer memory, and some of the "
              + cfg.tp()
              + " GPUs have no direct peer access (staged through host memory in the profile's"
              + " pcie_fabric); use --allreduce nccl");
    }
    if ((cfg.allreduce() == AllreduceAlgorithm.ONESHOT
            || cfg.allreduce() == AllreduceAlgorithm.TWOSHOT)
        && !hw.interconnect().nvlink()
        && cfg.tp() > 2) {
      warnings.add(hw.collectives().peerAllreduceNote());
    }
    if (cfg.spec() != null && cfg.spec().algorithm().equals("MTP") && s.numMtpLayers() == 0) {
      warnings.add(
          "MTP: the model config has no MTP layer (num_nextn_predict_layers is 0); predicted as if"
              + " it had one shaped as the last decoder layer, which the checkpoint cannot serve");
    }
    if (cfg.a2a().deepEp() && !hw.interconnect().nvlink()) {
      warnings.add(
          "DeepEP-style all-to-all is built for NVLink/RDMA; on a PCIe-only box it may not run at"
              + " all; predicted with NCCL all-to-all");
    }
    if (cfg.a2a().deepEp()) {
      warnings.add(
          cfg.a2a().cliName()
              + " is a what-if: the engine's all-to-all is --moe-a2a-backend all-to-all (f32"
              + " blocks of every slice token to every peer)");
    }
    if (cfg.a2a().dispatches() && cfg.ep() == 1) {
      warnings.add("--moe-a2a-backend " + cfg.a2a().cliName() + " needs --ep-size > 1; ignored");
    }
    for (WeightFormat f : new WeightFormat[] {cfg.quant().experts(), cfg.quant().dense()}) {
      if (!hw.gpu().supportsDtype(f.computeDtype())) {
        warnings.add(
            f.cliName()
                + " has no tensor-core path on "
                + hw.gpu().arch()
                + ": weights are dequantised and multiplied at the bf16 rate");
      }
    }
  }

  private static Map<String, Object> configMap(ServingConfig c) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("tp_size", c.tp());
    m.put("ep_size", c.ep());
    m.put("moe_a2a_backend", c.a2a().cliName());
    m.put("allreduce", c.allreduce().cliName());
    m.put("quantization", c.quant().name());
    m.put("kv_cache_dtype", c.kvDtype());
    m.put("batch_size", c.batch());
    m.put("context_len", c.contextLen());
    m.put("cuda_graph", c.cudaGraph());
    m.put("cuda_graph_max_bs", c.cudaGraphMaxBs());
    if (c.spec() != null) {
      m.put("speculative_algorithm", c.spec().algorithm());
      m.put("speculative_num_steps", c.spec().numSteps());
      m.put("speculative_num_draft_tokens", c.spec().numDraftTokens());
      m.put("speculative_eagle_topk", c.spec().topK());
      m.put("speculative_accept_length", c.spec().acceptLength());
      m.put("speculative_verify", c.spec().verifyGraphed() ? "graph" : "eager");
      if (!c.spec().acceptPerPosition().isEmpty()) {
        m.put("speculative_accept_per_position", c.spec().acceptPerPosition());
      }
    }
    return m;
  }
}
