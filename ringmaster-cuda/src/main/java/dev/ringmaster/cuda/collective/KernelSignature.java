package dev.ringmaster.cuda.collective;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ringmaster.cuda.driver.NativeLibraries;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * Checks a kernel's parameter list against the argument block the host builds for it ({@code
 * cuFuncGetParamInfo}, CUDA 12.4+): a count or struct size that disagrees with the {@code .cu}
 * signature would otherwise pass garbage to the kernel, or fail only at launch. Drivers without the
 * call skip the check.
 */
@SuppressWarnings("restricted") // binding native code is this class's purpose
final class KernelSignature {
  private static final Optional<MethodHandle> PARAM_INFO =
      NativeLibraries.loadDriver()
          .find("cuFuncGetParamInfo")
          .map(
              s ->
                  Linker.nativeLinker()
                      .downcallHandle(
                          s,
                          FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS)));

  private KernelSignature() {}

  /**
   * Throws {@link IllegalStateException} unless {@code function} takes exactly {@code arity}
   * parameters and, when {@code firstBytes > 0}, its first one is {@code firstBytes} long.
   */
  static void check(long function, String name, int arity, int firstBytes) {
    if (PARAM_INFO.isEmpty()) {
      return;
    }
    try (Arena a = Arena.ofConfined()) {
      MemorySegment offset = a.allocate(JAVA_LONG);
      MemorySegment size = a.allocate(JAVA_LONG);
      for (int i = 0; i <= arity; i++) {
        int rc = (int) PARAM_INFO.get().invoke(function, (long) i, offset, size);
        if (i < arity && rc != 0) {
          throw new IllegalStateException(
              name + " takes " + i + " parameters, the host passes " + arity);
        }
        if (i == arity && rc == 0) {
          throw new IllegalStateException(
              name + " takes more than the " + arity + " parameters the host passes");
        }
        if (i == 0 && firstBytes > 0 && size.get(JAVA_LONG, 0) != firstBytes) {
          throw new IllegalStateException(
              name
                  + "'s first parameter is "
                  + size.get(JAVA_LONG, 0)
                  + " bytes, the host passes "
                  + firstBytes);
        }
      }
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }
}
