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
 * Makes and caches one {@link RowKernel} per (vector width, dtype): each is a hidden class defined
 * from the bytes of {@link RowKernelTemplate}, with its {@link KernelSpec} as class data, so the
 * JIT sees the species and dtype as constants (see the template's comment for why).
 */
final class RowKernels {
  private static final Map<KernelSpec, RowKernel> CACHE = new ConcurrentHashMap<>();
  private static final String TEMPLATE = RowKernelTemplate.class.getSimpleName() + ".class";

  private RowKernels() {}

  /** The kernel for weights of {@code dtype} using float vectors of {@code vectorBits}. */
  static RowKernel get(int vectorBits, DType dtype) {
    return CACHE.computeIfAbsent(new KernelSpec(vectorBits, dtype), RowKernels::define);
  }

  private static RowKernel define(KernelSpec spec) {
    try {
      MethodHandles.Lookup hidden =
          MethodHandles.lookup().defineHiddenClassWithClassData(templateBytes(), spec, true);
      return (RowKernel)
          hidden.findConstructor(hidden.lookupClass(), MethodType.methodType(void.class)).invoke();
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException("cannot define the CPU kernel for " + spec, e);
    }
  }

  private static byte[] templateBytes() {
    try (InputStream in = RowKernels.class.getResourceAsStream(TEMPLATE)) {
      if (in == null) {
        throw new IllegalStateException("class file " + TEMPLATE + " not found");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
