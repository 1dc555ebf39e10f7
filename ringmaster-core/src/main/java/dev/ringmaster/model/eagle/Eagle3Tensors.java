package dev.ringmaster.model.eagle;

import dev.ringmaster.backend.DType;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.weights.TensorSpec;
import dev.ringmaster.model.weights.TensorView;
import dev.ringmaster.model.weights.WeightStore;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * The tensors of an EAGLE-3 head in the {@code LlamaForCausalLMEagle3} layout SGLang and vLLM load:
 * {@code fc.weight} {@code [H, 3H]} (and {@code fc.bias} with {@code "bias": true}), {@code
 * midlayer.input_layernorm}, {@code midlayer.hidden_norm}, {@code midlayer.self_attn.q_proj /
 * k_proj / v_proj} over {@code 2H} inputs, {@code midlayer.self_attn.o_proj}, {@code
 * midlayer.post_attention_layernorm}, {@code midlayer.mlp.gate_proj / up_proj / down_proj}, {@code
 * norm.weight}, {@code lm_head.weight} {@code [draft_vocab_size, H]} and {@code d2t} (the offset of
 * each draft token's target id: target = draft + d2t[draft]). Checkpoints write the head's own
 * tensors with or without a {@code model.} prefix; {@code t2d} and any {@code embed_tokens} are not
 * read (the target's embedding is used). Without {@code lm_head.weight} the target's LM head is
 * used, which needs {@code draft_vocab_size} equal to the vocabulary.
 */
public final class Eagle3Tensors {
  private final Eagle3HeadConfig cfg;
  private final String prefix;
  private final String lmHead;
  private final String d2t;

  /** Makes a linear layer of {@code [rows, cols]} from the tensor {@code name + ".weight"}. */
  @FunctionalInterface
  public interface LinearLoader<L> {
    /** The linear named {@code name} (without {@code .weight}). */
    L load(String name, int rows, int cols, boolean bias);
  }

  /** Makes a vector of {@code n} values from the tensor {@code name}. */
  @FunctionalInterface
  public interface VectorLoader<V> {
    /** The vector named {@code name}. */
    V load(String name, int n);
  }

  /**
   * A head's loaded tensors.
   *
   * @param <L> the backend's linear layer
   * @param <V> the backend's vector
   */
  public record Loaded<L, V>(
      L fc,
      V inputNorm,
      V hiddenNorm,
      L q,
      L k,
      L v,
      L o,
      V postNorm,
      L gate,
      L up,
      L down,
      V norm) {}

  private Eagle3Tensors(Eagle3HeadConfig cfg, String prefix, String lmHead, String d2t) {
    this.cfg = cfg;
    this.prefix = prefix;
    this.lmHead = lmHead;
    this.d2t = d2t;
  }

  /**
   * The names in {@code store}: whether the head's tensors carry a {@code model.} prefix, and which
   * of the optional {@code lm_head} and {@code d2t} it holds.
   *
   * @throws ModelLoadException when there is no {@code fc.weight}, or no LM head where the draft
   *     vocabulary is smaller than the target's, or no {@code d2t} for it
   */
  public static Eagle3Tensors resolve(WeightStore store, Eagle3HeadConfig cfg) {
    String prefix;
    if (store.contains("fc.weight")) {
      prefix = "";
    } else if (store.contains("model.fc.weight")) {
      prefix = "model.";
    } else {
      throw new ModelLoadException(
          store.dir()
              + ": tensor 'fc.weight' is missing: not an EAGLE-3 head checkpoint"
              + " (LlamaForCausalLMEagle3 layout: fc, midlayer.*, norm, lm_head, d2t)");
    }
    String head = first(store, "lm_head.weight", "model.lm_head.weight");
    boolean fullVocab = cfg.draftVocabSize() == cfg.vocabSize();
    if (head == null && !fullVocab) {
      throw new ModelLoadException(
          store.dir()
              + ": tensor 'lm_head.weight' is missing; the head's draft vocabulary ("
              + cfg.draftVocabSize()
              + " tokens) needs its own LM head");
    }
    String map = first(store, "d2t", "model.d2t");
    if (map == null && !fullVocab) {
      throw new ModelLoadException(
          store.dir()
              + ": tensor 'd2t' is missing; a draft vocabulary of "
              + cfg.draftVocabSize()
              + " of the target's "
              + cfg.vocabSize()
              + " tokens needs it to map draft ids to target ids");
    }
    return new Eagle3Tensors(
        cfg,
        prefix,
        head == null ? null : head.substring(0, head.length() - ".weight".length()),
        map);
  }

  private static String first(WeightStore store, String a, String b) {
    return store.contains(a) ? a : store.contains(b) ? b : null;
  }

  /** Whether the checkpoint holds its own LM head ({@link #lmHead}). */
  public boolean hasLmHead() {
    return lmHead != null;
  }

  /** The LM head's name without {@code .weight}, or null when the target's is used. */
  public String lmHead() {
    return lmHead;
  }

  /** Loads the head's layers (all but the LM head) with the backend's loaders. */
  public <L, V> Loaded<L, V> load(LinearLoader<L> linear, VectorLoader<V> vector) {
    int h = cfg.hiddenSize();
    int hd = cfg.headDim();
    int inter = cfg.intermediateSize();
    String m = prefix + "midlayer.";
    return new Loaded<>(
        linear.load(prefix + "fc", h, 3 * h, cfg.fcBias()),
        vector.load(m + "input_layernorm.weight", h),
        vector.load(m + "hidden_norm.weight", h),
        linear.load(m + "self_attn.q_proj", cfg.numHeads() * hd, 2 * h, false),
        linear.load(m + "self_attn.k_proj", cfg.numKvHeads() * hd, 2 * h, false),
        linear.load(m + "self_attn.v_proj", cfg.numKvHeads() * hd, 2 * h, false),
        linear.load(m + "self_attn.o_proj", h, cfg.numHeads() * hd, false),
        vector.load(m + "post_attention_layernorm.weight", h),
        linear.load(m + "mlp.gate_proj", inter, h, false),
        linear.load(m + "mlp.up_proj", inter, h, false),
        linear.load(m + "mlp.down_proj", h, inter, false),
        vector.load(prefix + "norm.weight", h));
  }

  /**
   * The target id of each draft id: {@code i + d2t[i]} (the identity without {@code d2t}).
   *
   * @throws ModelLoadException when {@code d2t} is not an integer vector of {@code
   *     draft_vocab_size} entries, or maps a draft id outside the target's vocabulary or two draft
   *     ids to one target id
   */
  public int[] hotTokenIds(WeightStore store) {
    int n = cfg.draftVocabSize();
    int[] ids = new int[n];
    if (d2t == null) {
      for (int i = 0; i < n; i++) {
        ids[i] = i;
      }
      return ids;
    }
    TensorView t = store.get(d2t);
    if (t.shape().length != 1 || t.shape()[0] != n) {
      throw new ModelLoadException(
          t.file()
              + ": tensor '"
              + d2t
              + "' has shape "
              + t.shapeString()
              + ", expected ["
              + n
              + "] (one offset per draft token, draft_vocab_size)");
    }
    if (t.dtype() != DType.I64 && t.dtype() != DType.I32) {
      throw new ModelLoadException(
          t.file() + ": tensor '" + d2t + "' is " + t.dtype() + ", expected I64 or I32 offsets");
    }
    boolean[] taken = new boolean[cfg.vocabSize()];
    for (int i = 0; i < n; i++) {
      long offset =
          t.dtype() == DType.I64
              ? t.data()
                  .getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i)
              : t.data()
                  .getAtIndex(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i);
      long id = i + offset;
      if (id < 0 || id >= cfg.vocabSize()) {
        throw new ModelLoadException(
            t.file()
                + ": d2t maps draft token "
                + i
                + " to "
                + id
                + ", outside the target's vocabulary (0.."
                + (cfg.vocabSize() - 1)
                + ")");
      }
      if (taken[(int) id]) {
        throw new ModelLoadException(
            t.file() + ": d2t maps two draft tokens to target token " + id + ": not a map");
      }
      taken[(int) id] = true;
      ids[i] = (int) id;
    }
    return ids;
  }

  /**
   * The tensors of a head shaped as {@code cfg} (floating tensors in {@code dtype}, {@code d2t} as
   * I64), in the unprefixed layout with its own LM head: what a random head is written from.
   */
  public static List<TensorSpec> specs(Eagle3HeadConfig cfg, DType dtype) {
    long h = cfg.hiddenSize();
    long hd = cfg.headDim();
    long inter = cfg.intermediateSize();
    List<TensorSpec> out = new ArrayList<>();
    out.add(matrix("fc.weight", h, 3 * h, dtype));
    if (cfg.fcBias()) {
      out.add(new TensorSpec("fc.bias", new long[] {h}, dtype, TensorSpec.Init.ZEROS));
    }
    String m = "midlayer.";
    out.add(ones(m + "input_layernorm.weight", h, dtype));
    out.add(ones(m + "hidden_norm.weight", h, dtype));
    out.add(matrix(m + "self_attn.q_proj.weight", cfg.numHeads() * hd, 2 * h, dtype));
    out.add(matrix(m + "self_attn.k_proj.weight", cfg.numKvHeads() * hd, 2 * h, dtype));
    out.add(matrix(m + "self_attn.v_proj.weight", cfg.numKvHeads() * hd, 2 * h, dtype));
    out.add(matrix(m + "self_attn.o_proj.weight", h, cfg.numHeads() * hd, dtype));
    out.add(ones(m + "post_attention_layernorm.weight", h, dtype));
    out.add(matrix(m + "mlp.gate_proj.weight", inter, h, dtype));
    out.add(matrix(m + "mlp.up_proj.weight", inter, h, dtype));
    out.add(matrix(m + "mlp.down_proj.weight", h, inter, dtype));
    out.add(ones("norm.weight", h, dtype));
    out.add(matrix("lm_head.weight", cfg.draftVocabSize(), h, dtype));
    out.add(
        new TensorSpec("d2t", new long[] {cfg.draftVocabSize()}, DType.I64, TensorSpec.Init.ZEROS));
    return out;
  }

  private static TensorSpec matrix(String name, long rows, long cols, DType dtype) {
    return new TensorSpec(name, new long[] {rows, cols}, dtype, TensorSpec.Init.NORMAL);
  }

  private static TensorSpec ones(String name, long n, DType dtype) {
    return new TensorSpec(name, new long[] {n}, dtype, TensorSpec.Init.ONES);
  }
}
