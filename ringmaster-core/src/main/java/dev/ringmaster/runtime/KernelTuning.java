package dev.ringmaster.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.config.IndexerCacheDtype;
import java.io.IOException;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The kernel choices of a run: which CPU and GPU kernels, variants and thresholds the backends use.
 * None of them changes what a model computes beyond the tolerances stated for each backend; they
 * exist to compare variants and to pick the fastest for a machine ({@code indexer-cache-dtype} also
 * changes how much KV cache fits: docs/numerics.md states what FP8 indexer keys change). Immutable;
 * set from the command line ({@code --kernel-option KEY=VALUE}, {@code --kernel-config FILE.json}),
 * built by tests and benchmarks with {@link #defaults()} and {@link #with}. Every node of a
 * multi-node run must use the same record ({@link #fingerprint()}).
 *
 * <p>Each component is one option: its key is the component name in kebab case ({@code
 * mlaFusedTokens} is {@code mla-fused-tokens}), its meaning the component's {@link Doc}, its
 * default the value in {@link #defaults()}. {@link #keys()} lists them, so help text, parsing and
 * JSON follow the components and cannot drift from them.
 *
 * @param cpuThreads CPU kernel threads, the calling thread included; 0 for one per core
 * @param cpuVectorBits CPU float vector width in bits (128, 256, 512), 0 for the preferred width
 * @param pdl launch this project's GPU kernels as programmatic dependent launches
 * @param fusedDecodeOps fused launches of decode-sized GPU steps
 * @param sharedExpertStream shared experts of decode-sized steps on a second stream
 * @param combineIntoNorm a MoE layer's expert sum added by the next norm's launch (one GPU)
 * @param moePairTokens most tokens whose routed experts run straight from the routed pairs
 * @param mlaFusedTokens most tokens of a step whose MLA attention runs as one fused launch
 * @param mlaFusedMaxContext longest context for which a step takes the fused MLA launch
 * @param mlaFusedAppend the fused MLA launch also appends the step's cache rows
 * @param mlaFusedVerify a verify pass's rows (several of one sequence) may take the fused MLA
 *     launch
 * @param mlaPrefillGemm MLA prefill attention as cuBLAS GEMMs over the gathered context
 * @param mlaExpandedPrefill MLA prefill in the expanded form where its scratch holds the context
 * @param mlaTensorCores MLA decode partials on tensor cores where the shape allows
 * @param mlaStages cache tiles in flight in the tensor-core MLA decode kernel
 * @param moeGroupedMinTokens fewest prefill-chunk tokens for per-expert cuBLAS GEMMs; 0 automatic
 * @param moeMmaMinTokens fewest step tokens for the tensor-core routed-expert kernels
 * @param moeDownRowsPerWarp output rows per warp of the CUDA-core MoE down projection
 * @param gemvRowsPerWarp output rows per warp of the one-token GEMV (when not split over K)
 * @param gemvSplitK warps sharing one row of the one-token GEMV
 * @param gemvTokenGroup most tokens of a bf16 GEMV pass that stream each weight row once (4 or 8)
 * @param quantOneToken a lone token's FP8 and NVFP4 GEMVs and CUDA-core experts take the one-token
 *     kernels
 * @param quantWeightsFirst the one-token FP8 GEMVs (and the shared experts' blocks of the one-token
 *     FP8 expert launches) issue their weight loads before the programmatic-launch wait
 * @param moeSharedFused a lone token's FP8 shared experts run as extra blocks of the one-token FP8
 *     routed experts' two launches instead of on the side stream
 * @param fp8MmaSwiglu decode batches' K-split FP8 tensor-core SwiGLU gate|up linears apply
 *     SiLU-and-mul in their split sum's launch
 * @param dsaSparseAttention DeepSeek Sparse Attention models attend to their top-k selections on
 *     the GPU (false: every position, to compare with dense attention)
 * @param moeSkipPaddingRows the padding rows of a decode graph bucket route to no expert
 * @param indexerCacheDtype how DeepSeek Sparse Attention models cache their indexer keys ({@link
 *     IndexerCacheDtype}'s spelling: {@code auto} or {@code fp8_e4m3})
 * @param indexerFusedOps the DSA indexer's {@code wk} and {@code weights_proj} as one GEMV launch
 *     (decode-sized steps) and its key norm, ropes and key append as one launch (bit-identical)
 * @param indexerTopkCandidates the multi-block top-k of long DSA score rows in three launches (one
 *     wide histogram, its threshold bin's candidates refined, the ordered write) instead of six
 *     radix passes (the same selections)
 * @param dsaDenseDecode DeepSeek Sparse Attention models decode with dense attention while their
 *     prefill stays sparse (to time dense decode at contexts whose dense prefill would take too
 *     long; not the model)
 * @param indexerScoresRegisters the DSA indexer's bf16 tensor-core scores keep each warp's query
 *     fragments in registers where the shape allows (heads <= 32, dim <= 128; the same bits)
 * @param indexerTopkHalfBins the candidate top-k's first pass bins the scores rounded to half (64
 *     bins an octave instead of 8; the same selections)
 * @param indexerTopkWideWrite the candidate top-k's ordered write takes four positions a thread and
 *     one block-wide scan per 4,096 positions (the same selections)
 * @param indexerScoresQuadReduce the register-fragment indexer scores sum their heads in registers
 *     (per lane, then across a quad of lanes) instead of through shared memory in head order
 *     (scores equal to f32 rounding)
 * @param quantMoeMmaMinTokens fewest step tokens for the tensor-core FP8 and NVFP4 routed-expert
 *     kernels (their CUDA-core kernels for 2-7 tokens re-read the codes per token group)
 * @param indexerScoresBulkCopy the head-sums-in-registers indexer scores take their key tiles by
 *     bulk (TMA) copies, one per key row, instead of 16-byte cp.async copies (the same bits)
 */
public record KernelTuning(
    @Doc("CPU kernel threads, the calling thread included; 0: one per core") int cpuThreads,
    @Doc("CPU float vector width in bits: 128, 256 or 512; 0: the widest the JIT compiles to SIMD")
        int cpuVectorBits,
    @Doc(
            "GPU: launch this project's kernels as programmatic dependent launches (bit-identical"
                + " results)")
        boolean pdl,
    @Doc(
            "GPU: fused launches for decode-sized steps (two GEMVs of one input, SwiGLU GEMV,"
                + " router GEMV with routing, MLA norm-rope-append)")
        boolean fusedDecodeOps,
    @Doc("GPU: a decode-sized step runs a MoE layer's shared experts on a second stream")
        boolean sharedExpertStream,
    @Doc(
            "GPU: the next norm adds a MoE layer's expert rows in its own launch (one GPU, not"
                + " while profiling)")
        boolean combineIntoNorm,
    @Doc("GPU: most tokens whose routed experts run straight from the routed pairs; 0: off")
        int moePairTokens,
    @Doc("GPU: most tokens of a step whose MLA attention runs as one fused launch; 0: off")
        int mlaFusedTokens,
    @Doc("GPU: longest context (tokens) for which a step takes the fused MLA launch")
        int mlaFusedMaxContext,
    @Doc("GPU: the fused MLA launch also builds and appends the step's cache rows")
        boolean mlaFusedAppend,
    @Doc(
            "GPU: a verify pass (up to 8 rows of one sequence at consecutive positions) takes the"
                + " fused MLA launch where its step size does (mla-fused-tokens); false: the"
                + " separate kernels")
        boolean mlaFusedVerify,
    @Doc("GPU: MLA prefill attention as cuBLAS GEMMs over each sequence's gathered context")
        boolean mlaPrefillGemm,
    @Doc("GPU: MLA prefill in the expanded form where its scratch holds the context")
        boolean mlaExpandedPrefill,
    @Doc("GPU: MLA decode attention partials on tensor cores where the shape allows")
        boolean mlaTensorCores,
    @Doc("GPU: cache tiles in flight in the tensor-core MLA decode kernel: 1 or 2") int mlaStages,
    @Doc(
            "GPU: fewest prefill-chunk tokens for per-expert cuBLAS GEMMs; 0: automatic (never"
                + " where the tensor-core expert kernels take the shape, else 128)")
        int moeGroupedMinTokens,
    @Doc("GPU: fewest step tokens for the tensor-core routed-expert kernels") int moeMmaMinTokens,
    @Doc("GPU: output rows per warp of the CUDA-core MoE down projection: 1, 2 or 4")
        int moeDownRowsPerWarp,
    @Doc("GPU: output rows per warp of the one-token GEMV when not split over K: 1, 2 or 4")
        int gemvRowsPerWarp,
    @Doc("GPU: warps sharing one row of the one-token GEMV: 1 (off), 2 or 4") int gemvSplitK,
    @Doc(
            "GPU: most tokens of one pass of the bf16 GEMVs (dense projections, SwiGLU, router),"
                + " each pass streaming the weights once: 4 or 8 (the same results)")
        int gemvTokenGroup,
    @Doc(
            "GPU: a lone token's FP8 and NVFP4 GEMVs, SwiGLU GEMVs and CUDA-core routed experts take"
                + " the one-token kernels (bit-identical; false: the general kernels)")
        boolean quantOneToken,
    @Doc(
            "GPU: the one-token FP8 GEMVs and the shared experts' blocks of the one-token FP8 expert"
                + " launches load their weights (one group of chunks a lane) before the"
                + " programmatic-launch wait, overlapping the previous kernel (bit-identical)")
        boolean quantWeightsFirst,
    @Doc(
            "GPU: a lone token's FP8 shared experts run as extra blocks of the one-token FP8 routed"
                + " experts' gate|up and down launches instead of on the side stream"
                + " (bit-identical)")
        boolean moeSharedFused,
    @Doc(
            "GPU: decode batches' FP8 SwiGLU gate|up linears on tensor cores (split over K) apply"
                + " SiLU-and-mul in the launch that sums their K slices (bit-identical; false: a"
                + " SiLU-and-mul launch of its own)")
        boolean fp8MmaSwiglu,
    @Doc(
            "GPU: DeepSeek Sparse Attention models attend to the indexer's top-k positions; false:"
                + " to every position (dense attention, for speed comparisons; not the model)")
        boolean dsaSparseAttention,
    @Doc(
            "GPU: the rows that pad a step to its decode graph's size route to no expert, so their"
                + " experts' weights are not read (false: they route as token 0)")
        boolean moeSkipPaddingRows,
    @Doc(
            "DeepSeek Sparse Attention: the indexer key cache's format: auto (f32 on the CPU, bf16"
                + " on the GPU) or fp8_e4m3 (e4m3 codes and one f32 scale per key, queries"
                + " quantized alike; the same as --indexer-cache-dtype)")
        String indexerCacheDtype,
    @Doc(
            "GPU: the DeepSeek Sparse Attention indexer's wk and weights_proj as one GEMV launch"
                + " (decode-sized steps) and its key LayerNorm, both ropes and the key's cache"
                + " append or FP8 quantization as one launch (false: separate launches; the same"
                + " bits)")
        boolean indexerFusedOps,
    @Doc(
            "GPU: the multi-block top-k of long DeepSeek Sparse Attention score rows in three"
                + " launches (a 12-bit histogram, the threshold bin's candidates refined, the"
                + " ordered write; false: six radix-select launches; the same selections)")
        boolean indexerTopkCandidates,
    @Doc(
            "GPU: DeepSeek Sparse Attention models decode with dense attention over every position"
                + " while prefill stays sparse (to time dense decode at long contexts without a"
                + " dense prefill; not the model)")
        boolean dsaDenseDecode,
    @Doc(
            "GPU: the DeepSeek Sparse Attention indexer's bf16 tensor-core scores hold each warp's"
                + " query fragments in registers where at most 32 heads of at most 128 dims allow"
                + " (false: re-read from shared memory per step; the same bits)")
        boolean indexerScoresRegisters,
    @Doc(
            "GPU: the candidate top-k (indexer-topk-candidates) bins its first pass by the top 12"
                + " bits of the half-rounded score's order key, 64 bins an octave (false: of the"
                + " f32 key, 8 an octave; the same selections)")
        boolean indexerTopkHalfBins,
    @Doc(
            "GPU: the candidate top-k's ordered write takes four positions a thread and one"
                + " block-wide scan per 4,096 positions (false: one position a thread, two scans"
                + " per 1,024; the same selections)")
        boolean indexerTopkWideWrite,
    @Doc(
            "GPU: the register-fragment indexer scores (indexer-scores-registers) sum their heads in"
                + " registers, per lane and then across a quad of lanes (false: through shared"
                + " memory in head order; scores equal to f32 rounding)")
        boolean indexerScoresQuadReduce,
    @Doc("GPU: fewest step tokens for the tensor-core FP8 and NVFP4 routed-expert kernels")
        int quantMoeMmaMinTokens,
    @Doc(
            "GPU: the indexer scores with head sums in registers (indexer-scores-quad-reduce) take"
                + " their key tiles by bulk (TMA) copies, one per key row, where the cache's block"
                + " size is a multiple of 32 (false: 16-byte cp.async copies; the same bits)")
        boolean indexerScoresBulkCopy) {

  /** The meaning of one option, shown by {@code --help}. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.RECORD_COMPONENT)
  public @interface Doc {
    /** One line: what the option chooses and its accepted values. */
    String value();
  }

  /** One option: its key, type, meaning and default. */
  public record Key(String name, Class<?> type, String doc, Object defaultValue) {}

  private static final RecordComponent[] COMPONENTS = KernelTuning.class.getRecordComponents();

  private static final KernelTuning DEFAULTS =
      new KernelTuning(
          0, 0, true, true, true, true, 0, 1, 1024, true, true, true, true, true, 1, 0, 8, 4, 1, 4,
          8, true, true, true, true, true, true, "auto", true, true, false, true, false, true, true,
          2, false);

  private static final List<Key> KEYS = buildKeys();

  /** Checks every value, naming the option that is out of range. */
  public KernelTuning {
    atLeast("cpu-threads", cpuThreads, 0);
    if (cpuVectorBits != 0
        && cpuVectorBits != 128
        && cpuVectorBits != 256
        && cpuVectorBits != 512) {
      throw new IllegalArgumentException(
          "kernel option cpu-vector-bits must be 0, 128, 256 or 512, got " + cpuVectorBits);
    }
    atLeast("moe-pair-tokens", moePairTokens, 0);
    atLeast("mla-fused-tokens", mlaFusedTokens, 0);
    atLeast("mla-fused-max-context", mlaFusedMaxContext, 0);
    if (mlaStages != 1 && mlaStages != 2) {
      throw new IllegalArgumentException(
          "kernel option mla-stages must be 1 or 2, got " + mlaStages);
    }
    atLeast("moe-grouped-min-tokens", moeGroupedMinTokens, 0);
    atLeast("moe-mma-min-tokens", moeMmaMinTokens, 1);
    atLeast("quant-moe-mma-min-tokens", quantMoeMmaMinTokens, 1);
    oneTwoOrFour("moe-down-rows-per-warp", moeDownRowsPerWarp);
    oneTwoOrFour("gemv-rows-per-warp", gemvRowsPerWarp);
    oneTwoOrFour("gemv-split-k", gemvSplitK);
    if (gemvTokenGroup != 4 && gemvTokenGroup != 8) {
      throw new IllegalArgumentException(
          "kernel option gemv-token-group must be 4 or 8, got " + gemvTokenGroup);
    }
    try {
      indexerCacheDtype = IndexerCacheDtype.parse(indexerCacheDtype).cliName();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "kernel option indexer-cache-dtype must be auto or fp8_e4m3, got '"
              + indexerCacheDtype
              + "'",
          e);
    }
  }

  /** {@link #indexerCacheDtype} as the enum the model config takes. */
  public IndexerCacheDtype indexerCache() {
    return IndexerCacheDtype.parse(indexerCacheDtype);
  }

  /** The measured defaults (docs/cuda-performance.md has the figures behind the GPU ones). */
  public static KernelTuning defaults() {
    return DEFAULTS;
  }

  /** Every option in component order. */
  public static List<Key> keys() {
    return KEYS;
  }

  /**
   * These choices with {@code key} set to {@code value} ({@code true}/{@code false}, a decimal
   * integer or a word, as the option's type says).
   *
   * @throws IllegalArgumentException naming the key and the known keys, or the bad value
   */
  public KernelTuning with(String key, String value) {
    int i = indexOf(key);
    Class<?> type = COMPONENTS[i].getType();
    String v = value.strip();
    Object parsed;
    if (type == boolean.class) {
      if (!v.equalsIgnoreCase("true") && !v.equalsIgnoreCase("false")) {
        throw new IllegalArgumentException(
            "kernel option " + key + " takes true or false, got '" + value + "'");
      }
      parsed = Boolean.parseBoolean(v);
    } else if (type == String.class) {
      parsed = v;
    } else {
      try {
        parsed = Integer.parseInt(v);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "kernel option " + key + " takes an integer, got '" + value + "'", e);
      }
    }
    return withValue(i, parsed);
  }

  /** These choices with {@code key} set to a boolean value (tests and benchmarks). */
  public KernelTuning with(String key, boolean value) {
    return with(key, String.valueOf(value));
  }

  /** These choices with {@code key} set to an integer value (tests and benchmarks). */
  public KernelTuning with(String key, int value) {
    return with(key, String.valueOf(value));
  }

  /**
   * These choices with {@code KEY=VALUE} settings applied in order (the command line's repeated
   * {@code --kernel-option}).
   */
  public KernelTuning withOptions(List<String> keyValues) {
    KernelTuning t = this;
    for (String kv : keyValues) {
      int eq = kv.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException(
            "--kernel-option takes KEY=VALUE, got '" + kv + "' (keys: " + keyNames() + ")");
      }
      t = t.with(kv.substring(0, eq).strip(), kv.substring(eq + 1));
    }
    return t;
  }

  /**
   * These choices with the settings of a JSON object applied: {@code {"mla-fused-tokens": 0, "pdl":
   * false}} (values as JSON booleans, numbers or strings).
   */
  public KernelTuning withJson(JsonNode object) {
    if (object == null || !object.isObject()) {
      throw new IllegalArgumentException(
          "a kernel config is a JSON object of option keys to values (keys: " + keyNames() + ")");
    }
    KernelTuning t = this;
    for (Map.Entry<String, JsonNode> e : object.properties()) {
      JsonNode v = e.getValue();
      if (!v.isBoolean() && !v.isIntegralNumber() && !v.isTextual()) {
        throw new IllegalArgumentException(
            "kernel option " + e.getKey() + " takes a boolean, an integer or a word, got " + v);
      }
      t = t.with(e.getKey(), v.asText());
    }
    return t;
  }

  /** The defaults with the settings of a JSON file ({@link #withJson}). */
  public static KernelTuning fromJsonFile(Path file) {
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException("--kernel-config " + file + ": no such file");
    }
    JsonNode node;
    try {
      node = new ObjectMapper().readTree(Files.readString(file));
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "--kernel-config " + file + ": cannot read it as JSON (" + e.getMessage() + ")", e);
    }
    try {
      return defaults().withJson(node);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--kernel-config " + file + ": " + e.getMessage(), e);
    }
  }

  /** Every option's value by key, in component order (the {@code --json} outputs' form). */
  public Map<String, Object> toMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < COMPONENTS.length; i++) {
      m.put(KEYS.get(i).name(), value(i));
    }
    return m;
  }

  /** The choices as a JSON object; {@link #withJson} reads it back. */
  public String toJson() {
    try {
      return new ObjectMapper().writeValueAsString(toMap());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Every option as {@code key=value}, comma-separated, in component order: equal iff equal. */
  public String fingerprint() {
    return toMap().entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue())
        .collect(Collectors.joining(","));
  }

  /**
   * The options that differ from the defaults as {@code --kernel-option} flags (for a benchmark's
   * command line); empty for the defaults.
   */
  public String describe() {
    Map<String, Object> d = DEFAULTS.toMap();
    return toMap().entrySet().stream()
        .filter(e -> !e.getValue().equals(d.get(e.getKey())))
        .map(e -> "--kernel-option " + e.getKey() + "=" + e.getValue())
        .collect(Collectors.joining(" "));
  }

  /**
   * The command line's help: per option a line with its key and default, then its meaning wrapped
   * to 78 columns.
   */
  public static String help() {
    StringBuilder sb = new StringBuilder();
    for (Key k : KEYS) {
      sb.append("  ").append(k.name()).append(" (default ").append(k.defaultValue()).append(")\n");
      StringBuilder line = new StringBuilder("     ");
      for (String word : k.doc().split(" ")) {
        if (line.length() + 1 + word.length() > 78) {
          sb.append(line).append('\n');
          line = new StringBuilder("     ");
        }
        line.append(' ').append(word);
      }
      sb.append(line).append('\n');
    }
    return sb.toString();
  }

  private KernelTuning withValue(int index, Object v) {
    Object[] args = new Object[COMPONENTS.length];
    Class<?>[] types = new Class<?>[COMPONENTS.length];
    for (int i = 0; i < COMPONENTS.length; i++) {
      args[i] = i == index ? v : value(i);
      types[i] = COMPONENTS[i].getType();
    }
    try {
      return KernelTuning.class.getDeclaredConstructor(types).newInstance(args);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof IllegalArgumentException iae) {
        throw iae;
      }
      throw new IllegalStateException(e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  private Object value(int i) {
    try {
      return COMPONENTS[i].getAccessor().invoke(this);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  private static int indexOf(String key) {
    for (int i = 0; i < KEYS.size(); i++) {
      if (KEYS.get(i).name().equals(key)) {
        return i;
      }
    }
    throw new IllegalArgumentException(
        "unknown kernel option '" + key + "'; known: " + keyNames() + " (see --help)");
  }

  private static String keyNames() {
    return KEYS.stream().map(Key::name).collect(Collectors.joining(", "));
  }

  private static List<Key> buildKeys() {
    List<Key> keys = new ArrayList<>();
    for (int i = 0; i < COMPONENTS.length; i++) {
      RecordComponent c = COMPONENTS[i];
      Doc doc = c.getAnnotation(Doc.class);
      if (doc == null) {
        throw new IllegalStateException("KernelTuning." + c.getName() + " has no @Doc");
      }
      keys.add(new Key(kebab(c.getName()), c.getType(), doc.value(), DEFAULTS.value(i)));
    }
    return List.copyOf(keys);
  }

  /** {@code mlaFusedTokens} to {@code mla-fused-tokens}. */
  static String kebab(String camel) {
    StringBuilder sb = new StringBuilder();
    for (char ch : camel.toCharArray()) {
      if (Character.isUpperCase(ch)) {
        sb.append('-').append(Character.toLowerCase(ch));
      } else {
        sb.append(ch);
      }
    }
    return sb.toString();
  }

  private static void atLeast(String key, int value, int min) {
    if (value < min) {
      throw new IllegalArgumentException(
          "kernel option " + key + " must be at least " + min + ", got " + value);
    }
  }

  private static void oneTwoOrFour(String key, int value) {
    if (value != 1 && value != 2 && value != 4) {
      throw new IllegalArgumentException(
          "kernel option " + key + " must be 1, 2 or 4, got " + value);
    }
  }
}
