package dev.ringmaster.sim.model;

import dev.ringmaster.model.arch.DecoderModel;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.RankContext;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.ops.ExpertTensors;
import dev.ringmaster.model.ops.WeightSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The weights of a model the engine runs, read off the engine's own loader ({@link
 * DecoderModel#load}) with a source that records what it is asked for: names and shapes are those
 * the CPU loader and the GPU uploader read, and how ranks divide each one is what the loader asks
 * for on rank 0 of two tensor-parallel ranks (a slice smaller than the whole is split; the whole is
 * replicated). Roles follow from the names.
 *
 * @param embedding the token embedding
 * @param head the final norm and the LM head (absent when tied)
 * @param attention per layer: its input norm and attention weights
 * @param mlp per layer: its post-attention norm and MLP or router and experts
 */
record LoaderWeights(
    List<Weight> embedding,
    List<Weight> head,
    Map<Integer, List<Weight>> attention,
    Map<Integer, List<Weight>> mlp) {

  /**
   * Records the loader's requests for {@code cfg} on rank 0 of two tensor-parallel ranks; null
   * where the model cannot be laid out over two ranks (the caller then uses its own table).
   */
  static LoaderWeights of(ModelConfig cfg) {
    Recorder r = new Recorder();
    try {
      DecoderModel.of(cfg).load(r, new RankContext(0, ParallelConfig.tensor(2), null), null);
    } catch (IllegalArgumentException | IllegalStateException notOnTwoRanks) {
      return null;
    }
    return r.result();
  }

  /** A weight source of no checkpoint that notes every request and returns nothing usable. */
  private static final class Recorder implements WeightSource<Object> {
    private static final Object HANDLE = new Object();
    private final List<Weight> embedding = new ArrayList<>();
    private final List<Weight> head = new ArrayList<>();
    private final Map<Integer, List<Weight>> attention = new TreeMap<>();
    private final Map<Integer, List<Weight>> mlp = new TreeMap<>();

    LoaderWeights result() {
      return new LoaderWeights(List.copyOf(embedding), List.copyOf(head), attention, mlp);
    }

    @Override
    public boolean contains(String name) {
      return false; // the smallest layout: per-expert tensors, biases only where the config asks
    }

    @Override
    public Object vector(String name, int n) {
      add(new Weight(strip(name), 1, n, 1, Role.NORM, Split.REPLICATED));
      return HANDLE;
    }

    @Override
    public Object linearRows(String prefix, int rows, int cols, Slice rowSlice, boolean bias) {
      Role role = role(prefix);
      boolean split = rowSlice.count() < rows;
      Split how =
          role == Role.EMBEDDING || role == Role.LM_HEAD
              ? Split.VOCAB
              : split ? Split.COLUMN : Split.REPLICATED;
      add(new Weight(prefix, rows, cols, 1, role, how));
      bias(prefix, rows, bias);
      return HANDLE;
    }

    @Override
    public Object linearCols(String prefix, int rows, int cols, Slice colSlice, boolean bias) {
      boolean split = colSlice.count() < cols;
      add(new Weight(prefix, rows, cols, 1, role(prefix), split ? Split.ROW : Split.REPLICATED));
      bias(prefix, rows, bias);
      return HANDLE;
    }

    @Override
    public Object latentProjection(String name, int rows, int cols, Slice rowSlice) {
      boolean split = rowSlice.count() < rows;
      add(
          new Weight(
              strip(name), rows, cols, 1, role(name), split ? Split.COLUMN : Split.REPLICATED));
      return HANDLE;
    }

    @Override
    public Object gateUp(String gatePrefix, String upPrefix, int inter, int hidden, Slice part) {
      Split how = part.count() < inter ? Split.COLUMN : Split.REPLICATED;
      add(new Weight(gatePrefix, inter, hidden, 1, role(gatePrefix), how));
      add(new Weight(upPrefix, inter, hidden, 1, role(upPrefix), how));
      return HANDLE;
    }

    @Override
    public Object experts(
        ExpertTensors t, int numExperts, int[] ids, int hidden, int inter, Slice part) {
      String p = t.prefix() + ".";
      add(new Weight(p + "gate_proj", inter, hidden, numExperts, Role.ROUTED_EXPERT, Split.EXPERT));
      add(new Weight(p + "up_proj", inter, hidden, numExperts, Role.ROUTED_EXPERT, Split.EXPERT));
      add(new Weight(p + "down_proj", hidden, inter, numExperts, Role.ROUTED_EXPERT, Split.EXPERT));
      return HANDLE;
    }

    private void bias(String prefix, int rows, boolean bias) {
      if (bias) {
        add(new Weight(prefix + ".bias", 1, rows, 1, Role.NORM, Split.REPLICATED));
      }
    }

    /** Files a weight by its name: the embedding, a layer's attention or MLP part, or the head. */
    private void add(Weight w) {
      String n = w.name();
      if (n.startsWith("model.embed_tokens")) {
        embedding.add(w);
      } else if (n.startsWith("model.layers.")) {
        String rest = n.substring("model.layers.".length());
        int layer = Integer.parseInt(rest.substring(0, rest.indexOf('.')));
        boolean attn = rest.contains(".self_attn.") || rest.contains(".input_layernorm");
        (attn ? attention : mlp).computeIfAbsent(layer, l -> new ArrayList<>()).add(w);
      } else {
        head.add(w);
      }
    }

    private static String strip(String name) {
      return name.endsWith(".weight")
          ? name.substring(0, name.length() - ".weight".length())
          : name;
    }

    private static Role role(String name) {
      if (name.startsWith("model.embed_tokens")) {
        return Role.EMBEDDING;
      }
      if (name.startsWith("lm_head")) {
        return Role.LM_HEAD;
      }
      if (name.contains(".self_attn.indexer.")) {
        return Role.INDEXER_PROJ;
      }
      if (name.contains(".self_attn.")) {
        return Role.ATTENTION_PROJ;
      }
      if (name.endsWith(".mlp.gate")) {
        return Role.ROUTER;
      }
      if (name.contains(".shared_experts.")) {
        return Role.SHARED_EXPERT;
      }
      if (name.contains(".experts.")) {
        return Role.ROUTED_EXPERT;
      }
      return Role.DENSE_MLP;
    }
  }
}
