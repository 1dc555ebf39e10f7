package dev.ringmaster.model.arch;

import dev.ringmaster.backend.DType;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.ops.ExpertTensors;
import dev.ringmaster.model.ops.WeightSource;
import dev.ringmaster.model.weights.TensorSpec;
import dev.ringmaster.model.weights.TensorSpec.Init;
import java.util.ArrayList;
import java.util.List;

/**
 * The tensors a checkpoint of a given configuration holds, with the names and shapes that
 * transformers' {@code save_pretrained} writes (per-expert layout): read off the architecture's own
 * loader ({@link DecoderModel#load}) with a source that records what it is asked for, so the names
 * are written in one place. Used to write random-weight models and to count parameters.
 */
public final class CheckpointLayout {
  private CheckpointLayout() {}

  /** All tensors of the main model (no MTP layers), in the order the loader reads them. */
  public static List<TensorSpec> tensors(ModelConfig cfg, DType dtype) {
    Recorder r = new Recorder(dtype);
    DecoderModel.of(cfg).load(r, RankContext.single(), null);
    return List.copyOf(r.specs);
  }

  /**
   * The tensors of the MTP layers ({@code num_nextn_predict_layers}, stored as layers {@code
   * num_hidden_layers..}), in the order the loader reads them; empty when the config has none.
   */
  public static List<TensorSpec> mtpTensors(ModelConfig cfg, DType dtype) {
    Recorder r = new Recorder(dtype);
    DecoderModel model = DecoderModel.of(cfg);
    for (int j = 0; j < cfg.numNextnPredictLayers(); j++) {
      model.loadMtp(r, RankContext.single(), j);
    }
    return List.copyOf(r.specs);
  }

  /** Everything a checkpoint of {@code cfg} holds: the main model, then its MTP layers. */
  public static List<TensorSpec> checkpointTensors(ModelConfig cfg, DType dtype) {
    List<TensorSpec> all = new ArrayList<>(tensors(cfg, dtype));
    all.addAll(mtpTensors(cfg, dtype));
    return List.copyOf(all);
  }

  /** Total parameters of the main model. */
  public static long parameterCount(ModelConfig cfg) {
    return tensors(cfg, DType.BF16).stream().mapToLong(TensorSpec::numel).sum();
  }

  /**
   * A weight source of an empty checkpoint that notes every tensor asked for: matrices get noise,
   * norm weights ones, biases zeros; the routers' score-correction biases are f32 zeros, as
   * DeepSeek-V3 checkpoints store them.
   */
  private static final class Recorder implements WeightSource<Object> {
    private static final Object HANDLE = new Object();
    private final List<TensorSpec> specs = new ArrayList<>();
    private final DType dtype;

    Recorder(DType dtype) {
      this.dtype = dtype;
    }

    @Override
    public boolean contains(String name) {
      return false; // the smallest layout: per-expert tensors, biases only where the config asks
    }

    @Override
    public Object vector(String name, int n) {
      if (name.endsWith("e_score_correction_bias")) {
        specs.add(new TensorSpec(name, new long[] {n}, DType.F32, Init.ZEROS));
      } else {
        specs.add(new TensorSpec(name, new long[] {n}, dtype, Init.ONES));
      }
      return HANDLE;
    }

    @Override
    public Object linearRows(String prefix, int rows, int cols, Slice rowSlice, boolean bias) {
      return linear(prefix, rows, cols, bias);
    }

    @Override
    public Object linearCols(String prefix, int rows, int cols, Slice colSlice, boolean bias) {
      return linear(prefix, rows, cols, bias);
    }

    @Override
    public Object latentProjection(String name, int rows, int cols, Slice rowSlice) {
      return matrix(name, rows, cols);
    }

    @Override
    public Object gateUp(String gatePrefix, String upPrefix, int inter, int hidden, Slice part) {
      linear(gatePrefix, inter, hidden, false);
      return linear(upPrefix, inter, hidden, false);
    }

    @Override
    public Object experts(
        ExpertTensors t, int numExperts, int[] ids, int hidden, int inter, Slice part) {
      for (int e : ids) {
        matrix(t.gate(e), inter, hidden);
        matrix(t.up(e), inter, hidden);
        matrix(t.down(e), hidden, inter);
      }
      return HANDLE;
    }

    private Object linear(String prefix, int rows, int cols, boolean bias) {
      matrix(prefix + ".weight", rows, cols);
      if (bias) {
        specs.add(new TensorSpec(prefix + ".bias", new long[] {rows}, dtype, Init.ZEROS));
      }
      return HANDLE;
    }

    private Object matrix(String name, int rows, int cols) {
      specs.add(new TensorSpec(name, new long[] {rows, cols}, dtype, Init.NORMAL));
      return HANDLE;
    }
  }
}
