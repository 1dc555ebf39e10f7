package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every kernel of {@code src/main/cuda} begins with {@code rm_pdl_prologue();}: with programmatic
 * dependent launch on, a kernel's blocks may run while the previous kernel of the stream is still
 * writing, and only the prologue's {@code griddepcontrol.wait} orders them after it. A kernel that
 * reads or writes global memory before it would race. Reads the sources (no GPU, no nvcc).
 *
 * <p>The one kind of access allowed before the wait: loads of weights, which no kernel writes, so
 * that their DRAM latency overlaps the previous kernel's tail. Kernels doing that are listed in
 * {@link #LOAD_WEIGHTS_FIRST} and must still call the prologue before anything else touches memory.
 */
class PdlPrologueTest {
  private static final Pattern KERNEL = Pattern.compile("\\bRM_KERNEL\\b");
  private static final Pattern ATTRIBUTES =
      Pattern.compile("(__launch_bounds__|__cluster_dims__)\\s*\\([^)]*\\)");
  private static final Pattern NAME = Pattern.compile("(\\w+)\\s*\\(");
  private static final Pattern PROLOGUE = Pattern.compile("rm_pdl_prologue\\s*\\(\\s*\\)\\s*;");

  /** Kernels whose bodies load weights (and only weights) before {@code rm_pdl_prologue();}. */
  static final Set<String> LOAD_WEIGHTS_FIRST =
      Set.of(
          "rm_mla_decode_fused",
          "rm_gemv1_fp8_wf",
          "rm_gemv_swiglu1_fp8_wf",
          "rm_moe_gate_up1_fp8_wf",
          "rm_moe_down1_fp8_wf");

  /** One kernel definition: its name and whether its body starts with the prologue call. */
  record Definition(String file, String name, boolean prologueFirst) {}

  static Path cudaSources() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      for (Path c :
          List.of(p.resolve("src/main/cuda"), p.resolve("ringmaster-cuda/src/main/cuda"))) {
        if (Files.isRegularFile(c.resolve("ringmaster_kernels.cu"))) {
          return c;
        }
      }
    }
    throw new IllegalStateException("ringmaster-cuda/src/main/cuda not found above the cwd");
  }

  /**
   * The source with comments, string and character literals blanked out and preprocessor lines
   * dropped (so {@code #define RM_KERNEL} is not a definition), same length up to line breaks.
   */
  static String code(String src) {
    StringBuilder out = new StringBuilder(src.length());
    int i = 0;
    boolean lineStart = true;
    while (i < src.length()) {
      char c = src.charAt(i);
      if (lineStart && c == '#') {
        while (i < src.length() && src.charAt(i) != '\n') {
          // a directive continued with a backslash goes on to the next line
          if (src.charAt(i) == '\\' && i + 1 < src.length() && src.charAt(i + 1) == '\n') {
            i++;
          }
          i++;
        }
        continue;
      }
      if (c == '/' && i + 1 < src.length() && src.charAt(i + 1) == '/') {
        while (i < src.length() && src.charAt(i) != '\n') {
          i++;
        }
        continue;
      }
      if (c == '/' && i + 1 < src.length() && src.charAt(i + 1) == '*') {
        int end = src.indexOf("*/", i + 2);
        i = end < 0 ? src.length() : end + 2;
        out.append(' ');
        continue;
      }
      if (c == '"' || c == '\'') {
        int j = i + 1;
        while (j < src.length() && src.charAt(j) != c) {
          j += src.charAt(j) == '\\' ? 2 : 1;
        }
        i = j + 1;
        out.append(' ');
        continue;
      }
      out.append(c);
      lineStart = c == '\n' || (lineStart && Character.isWhitespace(c));
      i++;
    }
    return out.toString();
  }

  /** The RM_KERNEL definitions of one file's source. */
  static List<Definition> definitions(String file, String src) {
    String code = code(src);
    List<Definition> out = new ArrayList<>();
    Matcher m = KERNEL.matcher(code);
    while (m.find()) {
      int open = code.indexOf('{', m.end());
      int semi = code.indexOf(';', m.end());
      if (open < 0 || (semi >= 0 && semi < open)) {
        out.add(new Definition(file, "declaration at offset " + m.start(), false));
        continue;
      }
      String signature = ATTRIBUTES.matcher(code.substring(m.end(), open)).replaceAll(" ");
      Matcher name = NAME.matcher(signature);
      String kernel = name.find() ? name.group(1) : "unnamed at offset " + m.start();
      String body = code.substring(open + 1).stripLeading();
      Matcher p = PROLOGUE.matcher(body);
      boolean first = p.lookingAt() || (LOAD_WEIGHTS_FIRST.contains(kernel) && p.find());
      out.add(new Definition(file, kernel, first));
    }
    return out;
  }

  static List<Definition> allDefinitions() throws IOException {
    List<Definition> all = new ArrayList<>();
    try (Stream<Path> files = Files.list(cudaSources())) {
      for (Path f : files.sorted().toList()) {
        String n = f.getFileName().toString();
        if (n.endsWith(".cu") || n.endsWith(".cuh")) {
          all.addAll(definitions(n, Files.readString(f)));
        }
      }
    }
    return all;
  }

  @Test
  void everyKernelBeginsWithThePrologue() throws IOException {
    List<Definition> all = allDefinitions();
    // The fatbin holds 38 kernels today; far fewer means the scan missed files or definitions.
    assertThat(all.size()).as("kernels found").isGreaterThanOrEqualTo(38);
    assertThat(all.stream().map(Definition::name).distinct().count()).isEqualTo(all.size());
    assertThat(all.stream().filter(d -> !d.prologueFirst()).toList())
        .as("kernels whose body does not begin with rm_pdl_prologue();")
        .isEmpty();
  }

  @Test
  void thePrologueWaitsBeforeItLetsDependentsLaunch() throws IOException {
    String common = Files.readString(cudaSources().resolve("common.cuh"));
    int def = common.indexOf("void rm_pdl_prologue()");
    assertThat(def).as("rm_pdl_prologue defined in common.cuh").isPositive();
    String body = common.substring(def, common.indexOf("\n}", def));
    int guard = body.indexOf("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900");
    int wait = body.indexOf("\"griddepcontrol.wait;\"");
    int launch = body.indexOf("\"griddepcontrol.launch_dependents;\"");
    assertThat(guard).as("sm_90 guard").isPositive();
    assertThat(wait).as("wait after the guard").isGreaterThan(guard);
    assertThat(launch).as("launch_dependents after the wait").isGreaterThan(wait);
    // The memory clobber keeps the compiler from moving loads above the wait.
    assertThat(body).contains("asm volatile(\"griddepcontrol.wait;\" ::: \"memory\")");
  }

  @Test
  void theCheckCatchesAMissingOrLatePrologue() {
    String src =
        """
        #define RM_KERNEL extern "C" __global__
        // RM_KERNEL void commented_out(int* x) { x[0] = 1; }
        RM_KERNEL void good(float* y) {
          // a comment first is fine
          rm_pdl_prologue();
          y[0] = 1.f;
        }
        RM_KERNEL void __launch_bounds__(128)
            bounded(float* y) { rm_pdl_prologue(); y[0] = 2.f; }
        RM_KERNEL void __cluster_dims__(8, 1, 1) __launch_bounds__(256)
            clustered(float* y) { rm_pdl_prologue(); y[0] = 2.f; }
        RM_KERNEL void rm_mla_decode_fused(const unsigned* w, float* y) {
          const unsigned v = w[0];
          rm_pdl_prologue();
          y[0] = v;
        }
        RM_KERNEL void rm_mla_decode_fused_without(float* y) { y[0] = 1.f; }
        RM_KERNEL void missing(float* y) {
          y[0] = 3.f;
        }
        RM_KERNEL void late(const int* ids, float* y) {
          const int t = ids[0];
          rm_pdl_prologue();
          y[t] = 4.f;
        }
        RM_KERNEL void quoted(float* y) {
          "rm_pdl_prologue();";
          y[0] = 5.f;
        }
        """;
    assertThat(definitions("t.cu", src))
        .containsExactly(
            new Definition("t.cu", "good", true),
            new Definition("t.cu", "bounded", true),
            new Definition("t.cu", "clustered", true),
            new Definition("t.cu", "rm_mla_decode_fused", true),
            new Definition("t.cu", "rm_mla_decode_fused_without", false),
            new Definition("t.cu", "missing", false),
            new Definition("t.cu", "late", false),
            new Definition("t.cu", "quoted", false));
  }
}
