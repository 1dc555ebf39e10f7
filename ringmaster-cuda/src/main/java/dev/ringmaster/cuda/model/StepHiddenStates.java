package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.runtime.HiddenCapture;

/**
 * Host copies of the hidden states a step's drafter reads ({@link
 * dev.ringmaster.runtime.LanguageModel#forwardHidden}), gathered from the GPU's activation buffers
 * as the forward passes them: the final-normed rows after the last layer ({@link
 * HiddenCapture#FINAL}), or the residual stream entering each listed layer, laid out {@code [token,
 * slot, hidden]} as the CPU model returns them. A step of several chunks fills its rows chunk by
 * chunk. Each copy waits for the stream, so steps that capture layers run eagerly. GPU thread only.
 */
final class StepHiddenStates {
  private final HiddenCapture capture;
  private final int hidden;
  private final int slots;
  private final float[] values;
  private int first;
  private int count;

  /** Room for {@code tokens} tokens' hidden states of {@code capture}. */
  StepHiddenStates(HiddenCapture capture, int hidden, int tokens) {
    this.capture = capture;
    this.hidden = hidden;
    this.slots = Math.max(1, capture.layerInputs().size());
    this.values = new float[tokens * slots * hidden];
  }

  /** What is captured. */
  HiddenCapture capture() {
    return capture;
  }

  /** The next forward runs the step's tokens {@code first .. first + count - 1}. */
  void chunk(int first, int count) {
    this.first = first;
    this.count = count;
  }

  /** Copies the chunk's rows of {@code residual} (the input of the layer of {@code slot}). */
  void layerInput(int slot, DeviceBuffer residual, CudaStream stream) {
    place(slot, residual.downloadFloats(stream, count * hidden));
  }

  /** Copies the chunk's final-normed rows, when the final hidden state is what is captured. */
  void finalRows(DeviceBuffer normed, CudaStream stream) {
    if (capture.isFinal()) {
      place(0, normed.downloadFloats(stream, count * hidden));
    }
  }

  private void place(int slot, float[] rows) {
    for (int t = 0; t < count; t++) {
      System.arraycopy(rows, t * hidden, values, ((first + t) * slots + slot) * hidden, hidden);
    }
  }

  /** Every token's captured values, {@code [tokens, capture.width(hidden)]}. */
  float[] values() {
    return values;
  }
}
