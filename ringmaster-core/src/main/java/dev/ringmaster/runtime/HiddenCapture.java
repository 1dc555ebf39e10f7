package dev.ringmaster.runtime;

import java.util.List;

/**
 * Which hidden states a forward returns beside its logits ({@link LanguageModel#forwardHidden}):
 * the final hidden state after the final norm ({@link #FINAL}, what an MTP layer reads), or the
 * residual stream entering each of the listed layers, concatenated per token in the listed order
 * (what an EAGLE-3 head reads). Entry {@code i} is the input of decoder layer {@code i}, the output
 * of layer {@code i - 1}; entry {@code num_hidden_layers} is the last layer's output before the
 * final norm. Entries may repeat.
 *
 * @param layerInputs the layers whose input is captured; empty for the final normed hidden state
 */
public record HiddenCapture(List<Integer> layerInputs) {
  /** The final hidden state after the final norm. */
  public static final HiddenCapture FINAL = new HiddenCapture(List.of());

  /** Copies the list and checks that no entry is negative. */
  public HiddenCapture {
    layerInputs = List.copyOf(layerInputs);
    for (int l : layerInputs) {
      if (l < 0) {
        throw new IllegalArgumentException("a captured layer index must be >= 0, got " + l);
      }
    }
  }

  /** The inputs of {@code layers}, in this order. */
  public static HiddenCapture ofLayerInputs(int... layers) {
    return new HiddenCapture(java.util.Arrays.stream(layers).boxed().toList());
  }

  /** Whether this is the final normed hidden state. */
  public boolean isFinal() {
    return layerInputs.isEmpty();
  }

  /** Values per token: {@code hiddenSize} for {@link #FINAL}, else one row per captured layer. */
  public int width(int hiddenSize) {
    return isFinal() ? hiddenSize : hiddenSize * layerInputs.size();
  }

  /**
   * Checks the entries against a model of {@code numLayers} decoder layers.
   *
   * @throws IllegalArgumentException naming the first entry past {@code numLayers}
   */
  public void check(int numLayers) {
    for (int l : layerInputs) {
      if (l > numLayers) {
        throw new IllegalArgumentException(
            "cannot capture the input of layer "
                + l
                + ": the model has "
                + numLayers
                + " decoder layers (inputs 0.."
                + numLayers
                + ", "
                + numLayers
                + " being the last layer's output)");
      }
    }
  }
}
