package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaDriver;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Properties;

/**
 * The kernels' fatbin, a classpath resource the build makes with nvcc (SASS for sm_90 and sm_120,
 * PTX for compute_90), and the build's record of whether nvcc was there.
 */
public final class KernelImage {
  /** Resource path of the fatbin. */
  public static final String FATBIN = "/dev/ringmaster/cuda/kernels/ringmaster_kernels.fatbin";

  /** Resource path of the build record ({@code nvcc=<version>} or {@code nvcc=absent}). */
  public static final String PROPERTIES = "/dev/ringmaster/cuda/kernels/kernels.properties";

  private KernelImage() {}

  /** True when the build compiled the kernels. */
  public static boolean isBuilt() {
    return KernelImage.class.getResource(FATBIN) != null;
  }

  /** The nvcc version the kernels were built with, or "absent". */
  public static String nvccVersion() {
    try (InputStream in = KernelImage.class.getResourceAsStream(PROPERTIES)) {
      if (in == null) {
        return "absent";
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("nvcc", "absent");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The fatbin's targets as the build recorded them ({@code sm_90}, ...), empty without it. */
  public static java.util.List<String> targets() {
    try (InputStream in = KernelImage.class.getResourceAsStream(PROPERTIES)) {
      if (in == null) {
        return java.util.List.of();
      }
      Properties p = new Properties();
      p.load(in);
      String t = p.getProperty("targets", "");
      return t.isBlank() ? java.util.List.of() : java.util.List.of(t.split(","));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Why the kernels are missing, with what to install. */
  public static String missingReason() {
    return "ringmaster-cuda was built without nvcc, so it holds no GPU kernels: install the CUDA"
        + " toolkit 13 (nvcc on the PATH, or CUDA_HOME set) and rebuild";
  }

  /**
   * Loads the fatbin into the current context as a module and returns its handle (the caller
   * unloads it); throws as {@link #load()} does.
   */
  public static long loadModule(CudaDriver driver) {
    byte[] image = load();
    try (Arena a = Arena.ofConfined()) {
      MemorySegment seg = a.allocate(image.length, 16);
      seg.copyFrom(MemorySegment.ofArray(image));
      return driver.moduleLoadData(seg);
    }
  }

  /** The fatbin bytes; throws {@link IllegalStateException} with {@link #missingReason()}. */
  public static byte[] load() {
    try (InputStream in = KernelImage.class.getResourceAsStream(FATBIN)) {
      if (in == null) {
        throw new IllegalStateException(missingReason());
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
