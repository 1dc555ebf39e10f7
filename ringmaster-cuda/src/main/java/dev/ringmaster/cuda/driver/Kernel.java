package dev.ringmaster.cuda.driver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One kernel function with its preallocated {@code void**} argument block: one 8-byte slot per
 * parameter and an array of pointers to the slots. Setting arguments writes the slots; {@code
 * cuLaunchKernel} copies their values, so the block is reused by every launch. Not thread-safe: use
 * it from the GPU's thread only.
 *
 * <p>With {@link #programmaticDependentLaunch(boolean)} on, launches go through {@code
 * cuLaunchKernelEx} with the programmatic stream serialization attribute (a preallocated {@link
 * LaunchConfig}, so still no allocation per launch); off, through {@code cuLaunchKernel} as before.
 * Only kernels that wait in {@code griddepcontrol.wait} before touching earlier kernels' data may
 * be launched so: every kernel of this project's fatbin does ({@code rm_pdl_prologue}).
 */
public final class Kernel {
  private final CudaDriver driver;
  private final String name;
  private final long function;
  private final MemorySegment slots;
  private final MemorySegment params;
  private final int arity;
  private final LaunchConfig pdlConfig = new LaunchConfig();
  // On by default (KernelTuning's pdl: measured 4% faster at batch 1 on an H200); the kernel sets
  // that own these follow the run's tuning.
  private boolean pdl = true;

  /** Binds {@code name} of {@code module} with {@code arity} parameters. */
  public Kernel(long module, String name, int arity) {
    this.driver = CudaDriver.get();
    this.name = name;
    this.function = driver.moduleGetFunction(module, name);
    this.arity = arity;
    Arena arena = Arena.ofAuto();
    this.slots = arena.allocate(8L * Math.max(arity, 1), 8);
    this.params = arena.allocate(ValueLayout.ADDRESS.byteSize() * Math.max(arity, 1), 8);
    for (int i = 0; i < arity; i++) {
      params.setAtIndex(ValueLayout.ADDRESS, i, slots.asSlice(8L * i, 8));
    }
  }

  /**
   * Launches from now on as programmatic dependent launches ({@code true}) or plain ones. A graph
   * keeps the kind its launches were captured with.
   */
  public Kernel programmaticDependentLaunch(boolean on) {
    this.pdl = on;
    return this;
  }

  /** Whether launches are programmatic dependent launches. */
  public boolean programmaticDependentLaunch() {
    return pdl;
  }

  /** The kernel's name. */
  public String name() {
    return name;
  }

  /** Sets a 64-bit argument (device pointer, {@code long long}); 0 passes a null pointer. */
  public Kernel arg(int i, long value) {
    slots.setAtIndex(ValueLayout.JAVA_LONG, check(i), value);
    return this;
  }

  /** Sets an {@code int} argument. */
  public Kernel arg(int i, int value) {
    slots.set(ValueLayout.JAVA_INT, 8L * check(i), value);
    return this;
  }

  /** Sets a {@code float} argument. */
  public Kernel arg(int i, float value) {
    slots.set(ValueLayout.JAVA_FLOAT, 8L * check(i), value);
    return this;
  }

  private int check(int i) {
    if (i < 0 || i >= arity) {
      throw new IndexOutOfBoundsException(name + " has " + arity + " parameters, not " + (i + 1));
    }
    return i;
  }

  /** Raises the dynamic shared memory limit (needed above 48 KiB). */
  public void maxDynamicSharedBytes(int bytes) {
    driver.funcSetAttribute(function, 8, bytes); // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  }

  /** Launches on {@code stream} with the arguments set so far. */
  public void launch(
      CudaStream stream, int gridX, int gridY, int gridZ, int block, int sharedBytes) {
    if (gridX <= 0 || gridY <= 0 || gridZ <= 0) {
      return; // nothing to do: an empty grid is an error for the driver
    }
    if (pdl) {
      pdlConfig.set(gridX, gridY, gridZ, block, 1, 1, sharedBytes, stream.handle());
      driver.launchKernelEx(pdlConfig, function, params, name);
      return;
    }
    driver.launchKernel(
        function, gridX, gridY, gridZ, block, 1, 1, sharedBytes, stream.handle(), params, name);
  }
}
