package dev.ringmaster.sim.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ringmaster.sim.serve.CollectiveCall;
import dev.ringmaster.sim.serve.MemoryPlan;
import dev.ringmaster.sim.serve.Prediction;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Locale;
import java.util.Map;

/** Renders a {@link Prediction} for people (text) and programs (JSON). */
public final class PredictionText {
  private static final ObjectMapper JSON =
      new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .enable(SerializationFeature.INDENT_OUTPUT);

  private PredictionText() {}

  /** JSON with snake_case fields. */
  public static String json(Prediction p) {
    try {
      return JSON.writeValueAsString(p);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A readable summary; a configuration that cannot run gives its header and the reasons ({@code
   * does not run: ...}), never a speed.
   */
  public static String text(Prediction p) {
    String full = fullText(p);
    if (p.runs()) {
      return full;
    }
    StringBuilder b = new StringBuilder(full.substring(0, full.indexOf('\n') + 1));
    for (String r : p.doesNotRun()) {
      b.append("  does not run: ").append(r).append(System.lineSeparator());
    }
    for (String w : p.warnings()) {
      b.append("  warning: ").append(w).append(System.lineSeparator());
    }
    return b.toString();
  }

  private static String fullText(Prediction p) {
    StringBuilder b = new StringBuilder();
    Map<String, Object> c = p.config();
    b.append(
        f(
            "%s on %s: tp %s, ep %s (%s), allreduce %s, %s weights, kv %s, batch %s, context %s, %s%n",
            p.model(),
            p.hardware(),
            c.get("tp_size"),
            c.get("ep_size"),
            c.get("moe_a2a_backend"),
            c.get("allreduce"),
            c.get("quantization"),
            c.get("kv_cache_dtype"),
            c.get("batch_size"),
            c.get("context_len"),
            Boolean.TRUE.equals(c.get("cuda_graph"))
                ? "CUDA graphs up to batch " + c.get("cuda_graph_max_bs")
                : "no CUDA graphs"));
    b.append(
        f(
            "  per token    %8.3f ms   %.1f tok/s per stream, %.1f tok/s total%n",
            p.perTokenMs(), p.perStreamTokensPerS(), p.decodeTokensPerS()));
    double step = p.stepTimeMs();
    b.append(
        f(
            "  step         %8.3f ms   dominant: %s (%.0f%%)%n",
            step, p.dominant(), 100 * p.breakdownMs().get(p.dominant()) / step));
    b.append("  breakdown   ");
    p.breakdownMs().forEach((k, v) -> b.append(f(" %s %.3f ms |", k, v)));
    b.setLength(b.length() - 2);
    b.append(System.lineSeparator());
    if (!p.collectivesPerStep().isEmpty()) {
      b.append("  collectives per step (target forward):").append(System.lineSeparator());
      for (CollectiveCall cc : p.collectivesPerStep()) {
        b.append(
            f(
                "    %4d x %-10s %10s  %-26s %-30s %8.1f us each %8.3f ms%n",
                cc.count(),
                cc.op(),
                size(cc.bytes()),
                cc.where(),
                cc.algorithm(),
                cc.timeUsEach(),
                cc.totalMs()));
      }
    }
    MemoryPlan m = p.memory();
    b.append(
        f(
            "  memory/GPU   %.1f GB: weights %.2f, activations %.2f, CUDA graphs %.2f (%d graphs),"
                + " all-to-all buffers %.2f, reserved %.2f, KV cache %.2f GB%n",
            m.totalBytes() / 1e9,
            m.weightsBytes() / 1e9,
            m.activationsBytes() / 1e9,
            m.cudaGraphBytes() / 1e9,
            m.cudaGraphCount(),
            m.a2aBufferBytes() / 1e9,
            m.reservedBytes() / 1e9,
            Math.max(0, m.kvBytes()) / 1e9));
    b.append(
        f(
            "  KV capacity  %,d tokens (%,.0f B per token per GPU): %,d sequences of %s tokens%n",
            p.kvCapacityTokens(),
            m.kvBytesPerToken(),
            p.maxBatchAtContext(),
            c.get("context_len")));
    b.append(
        f(
            "  prefill      %8.1f ms for one %s-token prompt%n",
            p.prefillMs(), c.get("context_len")));
    if (p.speculative() != null) {
      var s = p.speculative();
      b.append(
          f(
              "  speculative  %s, %s steps, %s draft tokens, accept %.2f: draft %.3f ms + verify %.3f"
                  + " ms + draft extend %.3f ms per cycle; %.2fx vs %.1f tok/s without%n",
              c.get("speculative_algorithm"),
              c.get("speculative_num_steps"),
              c.get("speculative_num_draft_tokens"),
              s.acceptLength(),
              s.draftMs(),
              s.verifyMs(),
              s.draftExtendMs(),
              s.speedup(),
              s.baselineTokensPerS()));
    }
    for (String w : p.warnings()) {
      b.append("  warning: ").append(w).append(System.lineSeparator());
    }
    return b.toString();
  }

  /** Human-readable byte size. */
  public static String size(double bytes) {
    if (bytes >= 1 << 30) {
      return f("%.2f GiB", bytes / (1 << 30));
    }
    if (bytes >= 1 << 20) {
      return f("%.2f MiB", bytes / (1 << 20));
    }
    if (bytes >= 1 << 10) {
      return f("%.1f KiB", bytes / (1 << 10));
    }
    return f("%.0f B", bytes);
  }

  private static String f(String fmt, Object... args) {
    return String.format(Locale.ROOT, fmt, args);
  }
}
