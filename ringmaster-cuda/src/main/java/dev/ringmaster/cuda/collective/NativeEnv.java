package dev.ringmaster.cuda.collective;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;

/**
 * Sets process environment variables that native libraries read (NCCL reads its settings from the
 * environment when a communicator is created), through libc's {@code setenv}.
 */
@SuppressWarnings("restricted") // calling libc is this class's purpose
final class NativeEnv {
  private static final MethodHandle SETENV =
      Linker.nativeLinker()
          .downcallHandle(
              Linker.nativeLinker().defaultLookup().find("setenv").orElseThrow(),
              FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));

  private NativeEnv() {}

  /**
   * Sets {@code name} to {@code value} unless the process already has it; returns the value used.
   */
  static String defaultTo(String name, String value) {
    String existing = System.getenv(name);
    if (existing != null) {
      return existing;
    }
    try (Arena a = Arena.ofConfined()) {
      int rc = (int) SETENV.invoke(a.allocateFrom(name), a.allocateFrom(value), 0);
      if (rc != 0) {
        throw new IllegalStateException("setenv(" + name + ") failed");
      }
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
    return value;
  }
}
