package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.LogitsComparison;
import dev.ringmaster.util.Npy;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ringmaster compare-logits}: two {@code generate --dump-logits} files compared step by step
 * within bf16-sized tolerances (see {@link LogitsComparison} for what the numbers mean).
 */
@Command(
    name = "compare-logits",
    mixinStandardHelpOptions = true,
    description = {
      "Compare two runs' logits (generate --dump-logits) step by step.",
      "Relative error = max|RUN - REF| / max|REF| per step; margin = REF's (top1 - top2) / max|REF|."
          + " Passes (exit 0) when every step's relative error is at most --rtol and every step"
          + " with a margin of at least --min-margin has the same argmax in both; else exit 1."
    })
final class CompareLogitsCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "REF.npy", description = "The reference run's logits.")
  Path ref;

  @Parameters(index = "1", paramLabel = "RUN.npy", description = "The run checked against it.")
  Path run;

  @Option(
      names = "--rtol",
      defaultValue = "0.02",
      description = "Largest relative error allowed at any step. Default: ${DEFAULT-VALUE}.")
  double rtol;

  @Option(
      names = "--min-margin",
      defaultValue = "0.05",
      description =
          "REF's relative top-2 margin from which the argmax must agree (below it a flip is"
              + " rounding). Default: ${DEFAULT-VALUE}.")
  double minMargin;

  @Option(names = "--json", description = "Print one JSON object instead of a table.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    if (!(rtol >= 0) || !(minMargin >= 0)) {
      throw new UserError("--rtol and --min-margin must be at least 0");
    }
    LogitsComparison.Result r =
        LogitsComparison.compare(load("REF", ref), load("RUN", run), rtol, minMargin);
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    if (json) {
      out.println(new ObjectMapper().writeValueAsString(toJson(r)));
      r.failures().forEach(f -> System.err.println("FAIL " + f));
    } else {
      printTable(out, r);
    }
    return r.pass() ? 0 : 1;
  }

  private static Npy.Matrix load(String role, Path file) {
    try {
      return Npy.read(file);
    } catch (java.nio.file.NoSuchFileException e) {
      throw new UserError(role + " " + file + ": no such file");
    } catch (IOException e) {
      throw new UserError(role + " " + (e.getMessage() != null ? e.getMessage() : file.toString()));
    }
  }

  private static void printTable(PrintStream out, LogitsComparison.Result r) {
    out.printf(
        "%5s %10s %10s %11s %11s%n", "step", "ref_argmax", "run_argmax", "ref_margin", "rel_error");
    for (LogitsComparison.Step s : r.steps()) {
      out.printf(
          "%5d %10d %10d %11.4g %11.3e%s%n",
          s.step(),
          s.refArgmax(),
          s.runArgmax(),
          s.refMargin(),
          s.relError(),
          s.sameArgmax() ? "" : "  argmax differs");
    }
    out.printf("steps compared: %d%n", r.steps().size());
    out.printf("steps with equal argmax: %d%n", r.equalArgmaxSteps());
    if (r.firstDivergence().isPresent()) {
      int d = r.firstDivergence().getAsInt();
      out.printf(
          "first argmax divergence: step %d (REF margin %.4g)%n", d, r.steps().get(d).refMargin());
    } else {
      out.println("first argmax divergence: none");
    }
    out.printf("max relative error: %.3e%n", r.maxRelError());
    if (r.pass()) {
      out.printf("PASS (rtol %s, min-margin %s)%n", r.rtol(), r.minMargin());
    } else {
      out.printf("FAIL (rtol %s, min-margin %s):%n", r.rtol(), r.minMargin());
      r.failures().forEach(f -> out.println("  " + f));
    }
  }

  private static ObjectNode toJson(LogitsComparison.Result r) {
    ObjectNode o = new ObjectMapper().createObjectNode();
    o.put("steps", r.steps().size());
    o.put("equal_argmax_steps", r.equalArgmaxSteps());
    if (r.firstDivergence().isPresent()) {
      int d = r.firstDivergence().getAsInt();
      o.put("first_divergence_step", d);
      o.put("margin_at_divergence", r.steps().get(d).refMargin());
    } else {
      o.putNull("first_divergence_step");
      o.putNull("margin_at_divergence");
    }
    o.put("max_rel_error", r.maxRelError());
    o.put("pass", r.pass());
    o.put("rtol", r.rtol());
    o.put("min_margin", r.minMargin());
    ArrayNode failures = o.putArray("failures");
    r.failures().forEach(failures::add);
    ArrayNode steps = o.putArray("per_step");
    for (LogitsComparison.Step s : r.steps()) {
      ObjectNode e = steps.addObject();
      e.put("step", s.step());
      e.put("ref_argmax", s.refArgmax());
      e.put("run_argmax", s.runArgmax());
      e.put("ref_margin", s.refMargin());
      e.put("rel_error", s.relError());
    }
    return o;
  }
}
