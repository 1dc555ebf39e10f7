package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Makes and caches one kernel per (vector width, dtype): each is a hidden class defined from the
 * bytes of its template ({@link RowKernelTemplate} for float weights, {@link Fp8RowKernelTemplate}
 * and {@link Nvfp4RowKernelTemplate} for quantized codes), with its {@link KernelSpec} as class
 * data, so the JIT sees the species and dtype as constants (see {@link RowKernelTemplate}'s comment
 * for why).
 */
final class RowKernels {
  private static final Map<KernelSpec, Object> CACHE = new ConcurrentHashMap<>();

  private RowKernels() {}

  /** The kernel for weights of {@code dtype} (F32, BF16 or F16) using vectors of {@code bits}. */
  static RowKernel get(int vectorBits, DType dtype) {
    KernelSpec spec = new KernelSpec(vectorBits, dtype);
    if (spec.quantized()) {
      throw new IllegalArgumentException(dtype + " codes take a quantized kernel");
    }
    return (RowKernel) CACHE.computeIfAbsent(spec, RowKernels::define);
  }

  /**
   * The kernel for quantized codes of {@code dtype} (F8_E4M3 for FP8, U8 for NVFP4) using float
   * vectors of {@code vectorBits}.
   */
  static QuantizedRowKernel quantized(int vectorBits, DType dtype) {
    KernelSpec spec = new KernelSpec(vectorBits, dtype);
    if (!spec.quantized()) {
      throw new IllegalArgumentException(dtype + " is not a quantized code type");
    }
    return (QuantizedRowKernel) CACHE.computeIfAbsent(spec, RowKernels::define);
  }

  private static Object define(KernelSpec spec) {
    Class<?> template =
        switch (spec.dtype()) {
          case F8_E4M3 -> Fp8RowKernelTemplate.class;
          case U8 -> Nvfp4RowKernelTemplate.class;
          default -> RowKernelTemplate.class;
        };
    try {
      MethodHandles.Lookup hidden =
          MethodHandles.lookup()
              .defineHiddenClassWithClassData(templateBytes(template), spec, true);
      return hidden
          .findConstructor(hidden.lookupClass(), MethodType.methodType(void.class))
          .invoke();
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException("cannot define the CPU kernel for " + spec, e);
    }
  }

  private static byte[] templateBytes(Class<?> template) {
    String name = template.getSimpleName() + ".class";
    try (InputStream in = RowKernels.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("class file " + name + " not found");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
