package dev.ringmaster.cli;

import java.nio.file.Files;
import java.nio.file.Path;

/** Finds the model directory: the one given, or the embedded default model of the repository. */
final class DefaultModel {
  /** Directory of the embedded default model, relative to the Ringmaster home. */
  static final String RELATIVE = "models/sotu-moe";

  private DefaultModel() {}

  /**
   * The Ringmaster install directory: the environment variable {@code RINGMASTER_HOME}, which the
   * launcher script {@code ringmaster} sets to its own directory, else the working directory. It
   * locates the embedded model and the checkout whose commit a benchmark record names; it never
   * selects what the engine computes or which kernels run.
   */
  static Path home() {
    String dir = System.getenv("RINGMASTER_HOME");
    return Path.of(dir == null || dir.isBlank() ? "." : dir);
  }

  static Path resolve(Path given) {
    if (given != null) {
      if (!Files.isDirectory(given)) {
        throw new UserError(given + ": not a model directory (expected config.json and weights)");
      }
      return given;
    }
    Path dir = home().resolve(RELATIVE);
    if (!Files.isDirectory(dir)) {
      throw new UserError(
          "no --model given and the embedded default model is missing at "
              + dir
              + "; pass --model DIR (a Hugging Face model directory)");
    }
    Path weights = dir.resolve("model.safetensors");
    if (!Files.exists(weights) && Files.exists(dir.resolve("model.safetensors.bz2"))) {
      throw new UserError(
          "the embedded default model's weights are still compressed ("
              + weights
              + ".bz2); start Ringmaster with the ringmaster launcher, build it with mvn package, or"
              + " run bunzip2 -k on that file");
    }
    return dir;
  }
}
