package dev.ringmaster.cuda.driver;

/** A non-blocking CUDA stream: work queued on it runs in order, apart from the legacy stream. */
public final class CudaStream implements AutoCloseable {
  private static final int CU_STREAM_NON_BLOCKING = 1;
  private static final int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

  private final CudaDriver driver;
  private final long handle;
  private boolean destroyed;

  private CudaStream(CudaDriver driver, long handle) {
    this.driver = driver;
    this.handle = handle;
  }

  /** Creates a stream in the current context. */
  public static CudaStream create() {
    CudaDriver d = CudaDriver.get();
    return new CudaStream(d, d.streamCreate(CU_STREAM_NON_BLOCKING));
  }

  /** The CUstream handle. */
  public long handle() {
    return handle;
  }

  /** Makes work queued on this stream from now on wait for {@code event}'s last record. */
  public void waitFor(CudaEvent event) {
    driver.streamWaitEvent(handle, event.handle());
  }

  /** Waits until everything queued so far has finished. */
  public void synchronize() {
    driver.streamSynchronize(handle);
  }

  /**
   * Captures the work {@code body} queues on this stream into an executable graph instead of
   * running it. Kernel arguments are copied at capture, so inputs must live in fixed buffers.
   */
  public CudaGraph capture(Runnable body) {
    driver.streamBeginCapture(handle, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    try {
      body.run();
    } catch (RuntimeException | Error e) {
      // End the capture whatever happened, so the stream is usable again; drop the partial graph.
      try {
        long partial = driver.streamEndCapture(handle);
        if (partial != 0) {
          driver.graphDestroy(partial);
        }
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
    return CudaGraph.instantiate(driver, driver.streamEndCapture(handle));
  }

  @Override
  public void close() {
    if (!destroyed) {
      destroyed = true;
      driver.streamDestroy(handle);
    }
  }
}
