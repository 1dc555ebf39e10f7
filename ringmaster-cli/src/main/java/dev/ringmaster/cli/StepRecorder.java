package dev.ringmaster.cli;

import dev.ringmaster.engine.Sampler;
import dev.ringmaster.engine.StepObserver;
import dev.ringmaster.util.Npy;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@code generate}'s step observer: records the model's own argmax at every step (JSON {@code
 * argmax_ids}), keeps the logits rows for {@code --dump-logits}, and feeds {@code --force-ids}.
 */
final class StepRecorder implements StepObserver {
  private final int vocab;
  private final int[] forced;
  private final boolean keepLogits;
  private final List<float[]> rows = new ArrayList<>();
  private int[] argmax = new int[16];
  private int steps;

  /**
   * @param vocab the vocabulary size (length of a logits row)
   * @param forced the token to feed after each step, or null to keep the sampled ones
   * @param keepLogits whether to keep every step's logits (held until written)
   * @throws UserError if a forced token is outside the vocabulary (before anything runs)
   */
  StepRecorder(int vocab, int[] forced, boolean keepLogits) {
    for (int id : forced != null ? forced : new int[0]) {
      if (id < 0 || id >= vocab) {
        throw new UserError(
            "--force-ids: token id " + id + " is outside the vocabulary (0.." + (vocab - 1) + ")");
      }
    }
    this.vocab = vocab;
    this.forced = forced;
    this.keepLogits = keepLogits;
  }

  @Override
  public int onStep(int step, float[] logits, int sampled) {
    if (steps == argmax.length) {
      argmax = Arrays.copyOf(argmax, 2 * steps);
    }
    argmax[steps++] = Sampler.argmax(logits, 0, vocab);
    if (keepLogits) {
      rows.add(Arrays.copyOf(logits, vocab)); // the model may reuse its array
    }
    return forced != null ? forced[step] : sampled;
  }

  /** The model's argmax at each step so far (under forcing, not necessarily the output ids). */
  int[] argmaxIds() {
    return Arrays.copyOf(argmax, steps);
  }

  /** Writes the kept logits as float32 {@code .npy} of shape (steps, vocab). */
  void writeLogits(Path file) {
    try {
      Npy.write(file, Npy.Matrix.ofRows(vocab, rows));
    } catch (IOException e) {
      throw new UserError("--dump-logits " + file + ": cannot write (" + e + ")");
    }
  }
}
