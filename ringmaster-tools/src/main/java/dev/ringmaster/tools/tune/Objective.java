package dev.ringmaster.tools.tune;

import dev.ringmaster.tools.benchserve.BenchServeResult;
import dev.ringmaster.tools.benchserve.RequestOutput;
import java.util.Locale;

/**
 * What a tune maximises (or minimises), computed from one {@code bench serve} run.
 *
 * @param kind throughput, goodput or latency
 * @param sloTtftMs a request meets the SLO only with a TTFT at most this, null for no bound
 * @param sloTpotMs a request meets the SLO only with a TPOT at most this, null for no bound
 */
public record Objective(Kind kind, Double sloTtftMs, Double sloTpotMs) {

  /** The figure a trial is ranked by. */
  public enum Kind {
    /** Output tokens per second of every request. */
    THROUGHPUT("output tok/s", true),
    /** Output tokens per second of the requests that met every SLO. */
    GOODPUT("goodput tok/s", true),
    /** Median end-to-end request latency in ms (lower is better). */
    LATENCY("median E2E ms", false),
    /** {@code bench one-batch}: decode tokens per second of the whole batch. */
    DECODE("decode tok/s", true),
    /** {@code bench one-batch}: prefill tokens per second of the whole batch. */
    PREFILL("prefill tok/s", true);

    private final String unit;
    private final boolean higherIsBetter;

    Kind(String unit, boolean higherIsBetter) {
      this.unit = unit;
      this.higherIsBetter = higherIsBetter;
    }

    /** Whether this is a {@code bench one-batch} figure (else a {@code bench serve} one). */
    public boolean oneBatch() {
      return this == DECODE || this == PREFILL;
    }

    /** The CLI name: {@code throughput}, {@code goodput}, {@code latency}. */
    public String cliName() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** Parses a CLI name. */
    public static Kind parse(String s) {
      for (Kind k : values()) {
        if (k.cliName().equals(s)) {
          return k;
        }
      }
      throw new IllegalArgumentException(
          "--objective must be throughput, goodput, latency (serve trials) or decode, prefill"
              + " (--mode one-batch), got "
              + s);
    }
  }

  /** Checks that goodput has an SLO and the bounds are positive. */
  public Objective {
    if (sloTtftMs != null && !(sloTtftMs > 0)) {
      throw new IllegalArgumentException("--slo-ttft-ms must be above 0, got " + sloTtftMs);
    }
    if (sloTpotMs != null && !(sloTpotMs > 0)) {
      throw new IllegalArgumentException("--slo-tpot-ms must be above 0, got " + sloTpotMs);
    }
    if (kind == Kind.GOODPUT && sloTtftMs == null && sloTpotMs == null) {
      throw new IllegalArgumentException(
          "--objective goodput needs an SLO: give --slo-ttft-ms and/or --slo-tpot-ms");
    }
  }

  /** Output tokens per second of every request, no SLOs. */
  public static Objective throughput() {
    return new Objective(Kind.THROUGHPUT, null, null);
  }

  /** Whether a larger value is better. */
  public boolean higherIsBetter() {
    return kind.higherIsBetter;
  }

  /** The column header of the objective. */
  public String unit() {
    return kind.unit;
  }

  /** {@code a} is better than {@code b}. */
  public boolean better(double a, double b) {
    return higherIsBetter() ? a > b : a < b;
  }

  /** One sentence on what is measured, for the report. */
  public String describe() {
    return switch (kind) {
      case THROUGHPUT -> "output tokens per second";
      case GOODPUT -> "goodput: output tokens per second of the requests meeting " + slos();
      case LATENCY -> "median end-to-end request latency in ms, lower is better";
      case DECODE -> "decode tokens per second of the batch";
      case PREFILL -> "prefill tokens per second of the batch";
    };
  }

  private String slos() {
    StringBuilder sb = new StringBuilder();
    if (sloTtftMs != null) {
      sb.append(String.format(Locale.ROOT, "TTFT <= %s ms", trim(sloTtftMs)));
    }
    if (sloTpotMs != null) {
      sb.append(sb.isEmpty() ? "" : " and ")
          .append(String.format(Locale.ROOT, "TPOT <= %s ms", trim(sloTpotMs)));
    }
    return sb.toString();
  }

  private static String trim(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
  }

  /** Whether one successful request met every SLO. */
  public boolean meetsSlo(RequestOutput o) {
    if (!o.success()) {
      return false;
    }
    if (sloTtftMs != null && o.ttftS() * 1000 > sloTtftMs) {
      return false;
    }
    if (sloTpotMs != null && o.outputLen() > 1) {
      double tpotMs = (o.latencyS() - o.ttftS()) / (o.outputLen() - 1) * 1000;
      return tpotMs <= sloTpotMs;
    }
    return true;
  }

  /** The share of requests that met every SLO (1 without SLOs). */
  public double attainment(BenchServeResult r) {
    if (r.outputs().isEmpty()) {
      return 0;
    }
    return (double) r.outputs().stream().filter(this::meetsSlo).count() / r.outputs().size();
  }

  /** Output tokens per second of the requests that met every SLO. */
  public double goodput(BenchServeResult r) {
    long tokens =
        r.outputs().stream().filter(this::meetsSlo).mapToLong(RequestOutput::outputLen).sum();
    return tokens / r.metrics().durationS();
  }

  /** This objective's value for one run. */
  public double value(BenchServeResult r) {
    return switch (kind) {
      case THROUGHPUT -> r.metrics().outputThroughput();
      case GOODPUT -> goodput(r);
      case LATENCY -> r.metrics().e2e().median();
      case DECODE, PREFILL ->
          throw new IllegalStateException(kind.cliName() + " is not a bench serve figure");
    };
  }
}
