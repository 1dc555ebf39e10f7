package dev.ringmaster.model.quant;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.backend.quant.Quantizers;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.arch.CheckpointLayout;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.config.QuantizationConfig;
import dev.ringmaster.model.weights.SafetensorsWriter;
import dev.ringmaster.model.weights.TensorSpec;
import dev.ringmaster.model.weights.TensorView;
import dev.ringmaster.model.weights.WeightStore;
import dev.ringmaster.util.Progress;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

/**
 * Quantizes an f32/bf16/f16 model directory into a new one in {@link QuantFormat}: every linear
 * layer of the decoder (attention projections, dense and shared MLPs, routed experts) is quantized
 * unless excluded; embeddings, norms, routers ({@code mlp.gate}) and the LM head stay as they are.
 * Tensor names, dtypes and shapes, and the {@code config.json} / {@code hf_quant_config.json}
 * fields, are those of the public DeepSeek FP8 and ModelOpt NVFP4 checkpoints; the weights go to
 * one {@code model.safetensors}. The other files of the directory (tokenizer, generation config)
 * are copied; a bf16 reference ({@code reference.json.gz}) is not, since it no longer applies.
 *
 * <p>NVFP4's {@code input_scale} (a calibrated activation scale) is written as 1: there is no
 * calibration data here, and Ringmaster multiplies NVFP4 weights with unquantized activations.
 */
public final class CheckpointQuantizer {
  /** The producer version written into ModelOpt's config fields. */
  static final String PRODUCER_VERSION = "ringmaster";

  private final QuantFormat format;
  private final List<String> exclude;
  private final int threads;

  /**
   * A quantizer to {@code format} that leaves modules matching {@code exclude} (names, parents or
   * globs, as {@link QuantizationConfig#excludes} reads them) unquantized, on every core.
   */
  public CheckpointQuantizer(QuantFormat format, List<String> exclude) {
    this(format, exclude, Runtime.getRuntime().availableProcessors());
  }

  /**
   * {@link #CheckpointQuantizer(QuantFormat, List)} quantizing up to {@code threads} modules at
   * once (each module is quantized by one thread; the writer stays in file order).
   */
  public CheckpointQuantizer(QuantFormat format, List<String> exclude, int threads) {
    if (threads < 1) {
      throw new IllegalArgumentException("quantization threads must be at least 1, got " + threads);
    }
    this.format = format;
    this.exclude = List.copyOf(exclude);
    this.threads = threads;
  }

  /**
   * What was written.
   *
   * @param quantized modules quantized
   * @param kept linear modules left unquantized
   * @param bytes bytes of the new weights file
   */
  public record Result(List<String> quantized, List<String> kept, long bytes) {}

  /** Quantizes model directory {@code in} into {@code out} (created; files there replaced). */
  public Result run(Path in, Path out) throws IOException {
    ModelConfig cfg = ModelConfigParser.parse(in);
    if (cfg.quantization().quantized()) {
      throw new ModelLoadException(
          in + ": the model is already quantized (" + cfg.quantization().method() + ")");
    }
    if (in.toAbsolutePath().normalize().equals(out.toAbsolutePath().normalize())) {
      throw new IllegalArgumentException("--out must differ from --model");
    }
    QuantizationConfig excluded =
        new QuantizationConfig(QuantizationConfig.Method.NONE, 0, 0, 0, exclude, "", "--exclude");
    try (WeightStore store = WeightStore.open(in)) {
      Map<String, Module> modules = linearModules(cfg, store, excluded);
      List<String> quantized = new ArrayList<>();
      List<String> kept = new ArrayList<>();
      modules.forEach((name, m) -> (m.quantize ? quantized : kept).add(name));
      Files.createDirectories(out);
      List<TensorSpec> specs = new ArrayList<>();
      Map<String, Module> producedBy = new HashMap<>();
      for (String name : store.names()) {
        TensorView t = store.get(name);
        String module = name.endsWith(".weight") ? name.substring(0, name.length() - 7) : null;
        Module m = module == null ? null : modules.get(module);
        if (m != null && m.quantize) {
          for (TensorSpec s : m.outputSpecs()) {
            specs.add(s);
            producedBy.put(s.name(), m);
          }
        } else {
          specs.add(new TensorSpec(name, t.shape(), t.dtype(), TensorSpec.Init.NORMAL));
        }
      }
      Path file = out.resolve("model.safetensors");
      Files.deleteIfExists(out.resolve("model.safetensors.index.json"));
      long total = specs.stream().mapToLong(TensorSpec::bytes).sum();
      try (Source source = new Source(store, specs, producedBy, modules);
          Progress p = Progress.start("quantizing weights", total, "B")) {
        SafetensorsWriter.write(file, specs, source, p::step);
      }
      copyOtherFiles(in, out);
      writeConfigs(in, out, kept);
      return new Result(List.copyOf(quantized), List.copyOf(kept), Files.size(file));
    }
  }

  /** One linear module of the checkpoint and, once computed, its quantized tensors. */
  private final class Module {
    final String name;
    final int rows;
    final int cols;
    final boolean quantize;
    String sharesScaleWith;

    Module(String name, int rows, int cols, boolean quantize) {
      this.name = name;
      this.rows = rows;
      this.cols = cols;
      this.quantize = quantize;
    }

    List<TensorSpec> outputSpecs() {
      TensorSpec.Init i = TensorSpec.Init.NORMAL;
      return switch (format) {
        case FP8 ->
            List.of(
                new TensorSpec(name + ".weight", new long[] {rows, cols}, DType.F8_E4M3, i),
                new TensorSpec(
                    name + ".weight_scale_inv",
                    new long[] {
                      ceilDiv(rows, Quantizers.FP8_BLOCK), ceilDiv(cols, Quantizers.FP8_BLOCK)
                    },
                    DType.F32,
                    i));
        case NVFP4 ->
            List.of(
                new TensorSpec(name + ".weight", new long[] {rows, cols / 2}, DType.U8, i),
                new TensorSpec(
                    name + ".weight_scale",
                    new long[] {rows, cols / Quantizers.NVFP4_GROUP},
                    DType.F8_E4M3,
                    i),
                new TensorSpec(name + ".weight_scale_2", new long[0], DType.F32, i),
                new TensorSpec(name + ".input_scale", new long[0], DType.F32, i));
      };
    }
  }

  /**
   * Produces the bytes of each output tensor: copies, or the quantized tensors of a module. The
   * writer asks for tensors in file order; the modules after the one being written are quantized
   * ahead on a pool of {@code threads} (a window of twice that many modules, so memory stays
   * bounded), so quantization runs on every core while the file is still written in order.
   */
  private final class Source implements SafetensorsWriter.DataSource, AutoCloseable {
    private final WeightStore store;
    private final Map<String, Module> producedBy;
    private final Map<String, Module> modules;
    private final List<Module> order = new ArrayList<>();
    private final Map<Module, Integer> positions = new HashMap<>();
    private final Map<Module, Future<Map<String, byte[]>>> ahead = new HashMap<>();
    private final ExecutorService pool;
    private final int window;
    private int submitted;
    private Module current;
    private Map<String, byte[]> currentOutputs;

    Source(
        WeightStore store,
        List<TensorSpec> specs,
        Map<String, Module> producedBy,
        Map<String, Module> modules) {
      this.store = store;
      this.producedBy = producedBy;
      this.modules = modules;
      for (TensorSpec s : specs) {
        Module m = producedBy.get(s.name());
        if (m != null && !positions.containsKey(m)) {
          positions.put(m, order.size());
          order.add(m);
        }
      }
      this.pool =
          Executors.newFixedThreadPool(
              threads,
              r -> {
                Thread t = new Thread(r, "quantize");
                t.setDaemon(true);
                return t;
              });
      this.window = 2 * threads;
    }

    @Override
    public void fill(TensorSpec spec, long offset, ByteBuffer out) {
      Module m = producedBy.get(spec.name());
      if (m == null) {
        TensorView t = store.get(spec.name());
        out.put(t.data().asSlice(offset, out.remaining()).asByteBuffer());
        return;
      }
      byte[] bytes = outputsOf(m).get(spec.name());
      out.put(bytes, (int) offset, out.remaining());
    }

    /** Only the module being written and the window ahead of it are kept in memory. */
    private synchronized Map<String, byte[]> outputsOf(Module m) {
      if (m != current) {
        int at = positions.get(m);
        while (submitted < order.size() && submitted <= at + window) {
          Module next = order.get(submitted++);
          ahead.put(next, pool.submit(() -> quantize(next)));
        }
        Future<Map<String, byte[]>> f = ahead.remove(m);
        try {
          currentOutputs = f.get();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted while quantizing " + m.name, e);
        } catch (ExecutionException e) {
          if (e.getCause() instanceof RuntimeException r) {
            throw r;
          }
          throw new IllegalStateException("quantizing " + m.name + " failed", e.getCause());
        }
        current = m;
      }
      return currentOutputs;
    }

    @Override
    public void close() {
      pool.shutdownNow();
    }

    private Map<String, byte[]> quantize(Module m) {
      float[] w = floats(store.get(m.name + ".weight"));
      Map<String, byte[]> o = new HashMap<>();
      switch (format) {
        case FP8 -> {
          Quantizers.Fp8Block q = Quantizers.fp8Block(w, m.rows, m.cols);
          o.put(m.name + ".weight", q.codes());
          o.put(m.name + ".weight_scale_inv", f32Bytes(q.scaleInv()));
        }
        case NVFP4 -> {
          float amax = Quantizers.amax(w);
          Module partner = m.sharesScaleWith == null ? null : modules.get(m.sharesScaleWith);
          if (partner != null) {
            amax = Math.max(amax, Quantizers.amax(floats(store.get(partner.name + ".weight"))));
          }
          Quantizers.Nvfp4 q = Quantizers.nvfp4(w, m.rows, m.cols, amax);
          o.put(m.name + ".weight", q.packed());
          o.put(m.name + ".weight_scale", q.scales());
          o.put(m.name + ".weight_scale_2", f32Bytes(new float[] {q.scale2()}));
          o.put(m.name + ".input_scale", f32Bytes(new float[] {1f}));
        }
      }
      return o;
    }
  }

  /** The linear modules of the decoder by name (sorted), each marked quantize or keep. */
  private Map<String, Module> linearModules(
      ModelConfig cfg, WeightStore store, QuantizationConfig excluded) {
    Map<String, Module> modules = new LinkedHashMap<>();
    for (TensorSpec s : CheckpointLayout.tensors(cfg, DType.BF16)) {
      if (s.shape().length != 2 || !s.name().endsWith(".weight")) {
        continue;
      }
      String module = s.name().substring(0, s.name().length() - ".weight".length());
      TensorView t = store.get(s.name());
      if (t == null) {
        throw new ModelLoadException(
            store.dir()
                + ": tensor '"
                + s.name()
                + "' is missing; model quantize reads checkpoints with per-expert tensors"
                + " (experts.E.gate_proj.weight), as save_pretrained writes them");
      }
      store.require(s.name(), s.shape());
      boolean always =
          module.equals("model.embed_tokens")
              || module.equals("lm_head")
              || module.endsWith(".mlp.gate");
      boolean quantize = !always && !excluded.excludes(module);
      int rows = (int) s.shape()[0];
      int cols = (int) s.shape()[1];
      if (quantize && format == QuantFormat.NVFP4 && cols % Quantizers.NVFP4_GROUP != 0) {
        throw new IllegalArgumentException(
            "module '"
                + module
                + "' has "
                + cols
                + " input features, not a multiple of 16, so it cannot be NVFP4; leave it"
                + " unquantized with --exclude "
                + module);
      }
      if (!always) {
        modules.put(module, new Module(module, rows, cols, quantize));
      } else if (!module.equals("model.embed_tokens")) {
        modules.put(module, new Module(module, rows, cols, false));
      }
    }
    for (Module m : modules.values()) {
      String partner =
          m.name.endsWith(".gate_proj")
              ? m.name.substring(0, m.name.length() - ".gate_proj".length()) + ".up_proj"
              : m.name.endsWith(".up_proj")
                  ? m.name.substring(0, m.name.length() - ".up_proj".length()) + ".gate_proj"
                  : null;
      Module p = partner == null ? null : modules.get(partner);
      if (m.quantize && p != null && p.quantize) {
        m.sharesScaleWith = partner;
      }
    }
    Map<String, Module> sorted = new LinkedHashMap<>();
    new TreeSet<>(modules.keySet()).forEach(k -> sorted.put(k, modules.get(k)));
    return sorted;
  }

  private void writeConfigs(Path in, Path out, List<String> kept) throws IOException {
    ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode config = (ObjectNode) json.readTree(Files.readString(in.resolve("config.json")));
    ObjectNode q = config.putObject("quantization_config");
    List<String> excludedLinears = new ArrayList<>(new TreeSet<>(kept));
    Files.deleteIfExists(out.resolve("hf_quant_config.json"));
    switch (format) {
      case FP8 -> {
        q.put("activation_scheme", "dynamic");
        q.put("fmt", "e4m3");
        if (!exclude.isEmpty()) {
          ArrayNode list = q.putArray("modules_to_not_convert");
          excludedLinears.stream()
              .filter(m -> !m.equals("lm_head") && !m.endsWith(".mlp.gate"))
              .forEach(list::add);
        }
        q.put("quant_method", "fp8");
        q.putArray("weight_block_size").add(Quantizers.FP8_BLOCK).add(Quantizers.FP8_BLOCK);
      }
      case NVFP4 -> {
        ObjectNode group = q.putObject("config_groups").putObject("group_0");
        for (String key : List.of("input_activations", "weights")) {
          ObjectNode g = group.putObject(key);
          g.put("dynamic", false);
          g.put("num_bits", 4);
          g.put("type", "float");
          g.put("group_size", Quantizers.NVFP4_GROUP);
        }
        group.putArray("targets").add("Linear");
        ArrayNode ignore = q.putArray("ignore");
        excludedLinears.forEach(ignore::add);
        q.put("quant_algo", "NVFP4");
        q.putObject("producer").put("name", "modelopt").put("version", PRODUCER_VERSION);
        q.put("quant_method", "modelopt");
        ObjectNode hf = json.createObjectNode();
        hf.putObject("producer").put("name", "modelopt").put("version", PRODUCER_VERSION);
        ObjectNode hq = hf.putObject("quantization");
        hq.put("quant_algo", "NVFP4");
        hq.putNull("kv_cache_quant_algo");
        hq.put("group_size", Quantizers.NVFP4_GROUP);
        ArrayNode ex = hq.putArray("exclude_modules");
        excludedLinears.forEach(ex::add);
        Files.writeString(out.resolve("hf_quant_config.json"), json.writeValueAsString(hf) + "\n");
      }
    }
    Files.writeString(out.resolve("config.json"), json.writeValueAsString(config) + "\n");
  }

  private static final Set<String> NOT_COPIED =
      Set.of(
          "config.json",
          "hf_quant_config.json",
          "model.safetensors.index.json",
          "reference.json",
          "reference.json.gz");

  private static void copyOtherFiles(Path in, Path out) throws IOException {
    try (Stream<Path> files = Files.list(in)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        String n = f.getFileName().toString();
        if (!NOT_COPIED.contains(n) && !n.endsWith(".safetensors")) {
          Files.copy(f, out.resolve(n), StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
  }

  private static float[] floats(TensorView t) {
    if (t.dtype() != DType.F32 && t.dtype() != DType.BF16 && t.dtype() != DType.F16) {
      throw new ModelLoadException(
          t.file() + ": tensor '" + t.name() + "' is " + t.dtype() + "; expected F32, BF16 or F16");
    }
    float[] out = new float[Math.toIntExact(t.numel())];
    for (int i = 0; i < out.length; i++) {
      out[i] = Numerics.load(t.data(), t.dtype(), i);
    }
    return out;
  }

  private static byte[] f32Bytes(float[] v) {
    ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (float f : v) {
      b.putFloat(f);
    }
    return b.array();
  }

  private static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }
}
