package dev.ringmaster.cuda;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.DeviceInfo;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The one platform thread that drives one GPU. A CUDA context is current per OS thread, so every
 * call that touches the device runs here: the thread retains the device's primary context and makes
 * it current once, then runs submitted work in order. Never drive a GPU from virtual threads.
 */
public final class GpuThread implements AutoCloseable {
  private final ExecutorService executor;
  private final int ordinal;
  private final DeviceInfo info;
  private volatile Thread thread;
  private int device;

  private GpuThread(int ordinal) {
    this.ordinal = ordinal;
    this.executor =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = Thread.ofPlatform().daemon().name("gpu-" + ordinal).unstarted(r);
              thread = t;
              return t;
            });
    this.info =
        call(
            () -> {
              CudaDriver d = CudaDriver.get();
              d.init();
              device = d.device(ordinal);
              d.setCurrentContext(d.primaryContextRetain(device));
              return DeviceInfo.query(d, ordinal);
            });
  }

  /** Starts the thread for GPU {@code ordinal} with its primary context current. */
  public static GpuThread start(int ordinal) {
    return new GpuThread(ordinal);
  }

  /** The GPU this thread drives. */
  public DeviceInfo device() {
    return info;
  }

  /** True when called from this GPU's thread. */
  public boolean isCurrent() {
    return Thread.currentThread() == thread;
  }

  /** Queues {@code work} on the GPU thread. */
  public <T> Future<T> submit(Callable<T> work) {
    return executor.submit(work);
  }

  /**
   * Queues {@code work} on the GPU thread with no future: the work reports its own outcome (a
   * rank-group step does).
   *
   * @throws java.util.concurrent.RejectedExecutionException once the thread is closed
   */
  public void execute(Runnable work) {
    executor.execute(work);
  }

  /**
   * Runs {@code work} on the GPU thread and waits for it; its exceptions are rethrown here (checked
   * ones wrapped). Called from the GPU thread itself, runs inline.
   */
  public <T> T call(Callable<T> work) {
    if (isCurrent()) {
      try {
        return work.call();
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
    try {
      return executor.submit(work).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted waiting for gpu-" + ordinal, e);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof RuntimeException r) {
        throw r;
      }
      if (c instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(c);
    }
  }

  /** Runs {@code work} on the GPU thread and waits for it. */
  public void run(Runnable work) {
    call(
        () -> {
          work.run();
          return null;
        });
  }

  /** Releases the primary context and stops the thread. */
  @Override
  public void close() {
    try {
      run(() -> CudaDriver.get().primaryContextRelease(device));
    } finally {
      executor.shutdown();
    }
  }
}
