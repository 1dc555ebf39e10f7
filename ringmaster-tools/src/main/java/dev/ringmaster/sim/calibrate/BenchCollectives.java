package dev.ringmaster.sim.calibrate;

import dev.ringmaster.parallel.bench.BenchmarkResult;
import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns {@code bench collectives} results into collective samples. NCCL results carry no protocol
 * (the benchmark lets NCCL choose), so they become {@link #AUTO} samples that the calibrator
 * assigns to whichever algorithm/protocol the profile predicts fastest, as NCCL's tuner would.
 * FUSED (one-shot with the residual add and RMSNorm on the way) is a kernel of its own. Recursive
 * doubling (CPU ranks only) is kept for the in-process fit, which the GPU fits ignore. AUTO (a
 * mixture by size) and operations the simulator does not model are left out, as are results that
 * failed their check.
 */
public final class BenchCollectives {
  /** Protocol of an NCCL sample whose algorithm and protocol NCCL chose itself. */
  public static final String AUTO = "auto";

  private BenchCollectives() {}

  /** The samples the calibrator can use, in input order. */
  public static List<CollectiveSample> samples(List<BenchmarkResult> results) {
    List<CollectiveSample> out = new ArrayList<>();
    for (BenchmarkResult r : results) {
      if (!r.correct() || r.op() == null) {
        continue;
      }
      String op =
          switch (r.op()) {
            case ALL_REDUCE -> "allreduce";
            case ALL_TO_ALL -> "alltoall";
            default -> null;
          };
      String algo = algorithm(r);
      if (op == null || algo == null) {
        continue;
      }
      // the calibrator fits NCCL all-to-all with one model, so only allreduces need the marker
      String protocol = algo.equals("nccl") && op.equals("allreduce") ? AUTO : null;
      out.add(new CollectiveSample(op, algo, protocol, r.worldSize(), r.bytes(), r.timeMicros()));
    }
    return out;
  }

  private static String algorithm(BenchmarkResult r) {
    if (r.algorithm() == null) {
      // single-algorithm operations (all-to-all) run on NCCL on GPUs
      return "nccl";
    }
    return switch (r.algorithm()) {
      case NCCL -> "nccl";
      case ONESHOT -> "oneshot";
      case FUSED -> "fused";
      case TWOSHOT -> "twoshot";
      case RING -> "ring";
      case RECURSIVE_DOUBLING -> "recursive_doubling";
      case AUTO -> null;
    };
  }
}
