package dev.ringmaster.cli;

import dev.ringmaster.model.ModelLoadException;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code ringmaster} command line. */
@Command(
    name = "ringmaster",
    mixinStandardHelpOptions = true,
    version = "ringmaster 0.1.0",
    description = "Inference engine for Mixture-of-Experts language models.",
    subcommands = {
      GenerateCommand.class,
      CompareLogitsCommand.class,
      ServeCommand.class,
      TokenizeCommand.class,
      ModelCommand.class,
      BenchCommand.class,
      DoctorCommand.class,
      TuneCommand.class,
      SimulateCommand.class,
      CommandLine.HelpCommand.class
    })
public final class Main implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** Builds the command line with Ringmaster's error handling. */
  public static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new Main());
    cl.setExecutionExceptionHandler(Main::handleError);
    EngineOptions.addKernelOptionHelp(cl);
    return cl;
  }

  /** Runs the CLI and exits with its status. */
  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /**
   * Prints expected failures (bad input, unusable model files) as one clear line instead of a stack
   * trace; anything else is a bug and keeps its trace.
   */
  private static int handleError(Exception e, CommandLine cl, CommandLine.ParseResult parseResult) {
    PrintWriter err = cl.getErr();
    // Another node failed, or could not be reached: one line naming it, status 1.
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof dev.ringmaster.model.multinode.NodeFailureException) {
        err.println("error: " + t.getMessage());
        err.flush();
        return 1;
      }
    }
    // A failure on a parallel rank arrives wrapped; report the rank's own user-facing cause.
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (isUserFacing(t)) {
        err.println("error: " + t.getMessage());
        err.flush();
        return 2;
      }
    }
    e.printStackTrace(err);
    return 1;
  }

  private static boolean isUserFacing(Throwable t) {
    return t instanceof ModelLoadException
        || t instanceof IllegalArgumentException
        || t instanceof UserError
        || t instanceof java.io.UncheckedIOException
        || t instanceof dev.ringmaster.model.tokenizer.TokenizerLoadException;
  }
}
