package dev.ringmaster.cli;

import dev.ringmaster.sim.report.DecodeScaling;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ringmaster bench scaling}: decode scaling across GPU counts from one-batch JSON files. */
@Command(
    name = "scaling",
    mixinStandardHelpOptions = true,
    description =
        "Decode scaling across GPU counts from bench one-batch --json files (one per parallel"
            + " layout): a table of every run, the best per GPU count with its speed-up, and a"
            + " PNG of the curves.")
final class ScalingReportCommand implements Callable<Integer> {
  @Option(
      names = "--from-json",
      split = ",",
      required = true,
      description = "bench one-batch --json files.")
  List<Path> files;

  @Option(names = "--plot", description = "Write the curves to this PNG.")
  Path plot;

  @Override
  public Integer call() throws Exception {
    List<DecodeScaling.Run> runs = new ArrayList<>();
    for (Path f : files) {
      if (!java.nio.file.Files.isRegularFile(f)) {
        throw new UserError("no such file: " + f);
      }
      try {
        runs.add(DecodeScaling.read(f));
      } catch (IllegalArgumentException | java.io.IOException e) {
        throw new UserError(f + ": " + e.getMessage());
      }
    }
    System.out.print(DecodeScaling.table(runs));
    if (plot != null) {
      DecodeScaling.plot(runs, plot);
      System.err.println("wrote " + plot);
    }
    return 0;
  }
}
