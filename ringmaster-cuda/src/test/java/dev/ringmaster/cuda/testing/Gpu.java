package dev.ringmaster.cuda.testing;

import dev.ringmaster.cuda.GpuThread;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.util.function.Consumer;

/**
 * The GPU every test of this JVM shares: GPU 0's thread, one stream and the loaded kernels. Tests
 * pass their body to {@link #run}, which executes it on the GPU thread.
 */
public final class Gpu {
  private static GpuThread thread;
  private static CudaStream stream;
  private static RingmasterKernels kernels;

  private Gpu() {}

  /** The GPU thread, started on first use. */
  public static synchronized GpuThread thread() {
    if (thread == null) {
      thread = GpuThread.start(0);
      thread.run(
          () -> {
            stream = CudaStream.create();
            kernels = new RingmasterKernels();
          });
    }
    return thread;
  }

  /** Runs {@code body} on the GPU thread with a fresh scope whose buffers are freed afterwards. */
  public static void run(Consumer<DeviceScope> body) {
    thread()
        .run(
            () -> {
              try (DeviceScope scope = new DeviceScope(stream)) {
                body.accept(scope);
                stream.synchronize();
              }
            });
  }

  /** The shared stream (GPU thread only). */
  public static CudaStream stream() {
    return stream;
  }

  /** The loaded kernels (GPU thread only). */
  public static RingmasterKernels kernels() {
    return kernels;
  }
}
