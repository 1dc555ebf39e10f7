package dev.ringmaster.cuda.driver;

/** A timing event: record on a stream, then read the time between two of them. */
public final class CudaEvent implements AutoCloseable {
  private final CudaDriver driver;
  private final long handle;
  private boolean destroyed;

  private CudaEvent(CudaDriver driver, long handle) {
    this.driver = driver;
    this.handle = handle;
  }

  /** Creates a timing event in the current context. */
  public static CudaEvent create() {
    CudaDriver d = CudaDriver.get();
    return new CudaEvent(d, d.eventCreate(0));
  }

  /**
   * Creates an event for ordering only ({@code CU_EVENT_DISABLE_TIMING}: cheaper to record and wait
   * for; {@link #millisSince} does not work on it).
   */
  public static CudaEvent createForOrdering() {
    CudaDriver d = CudaDriver.get();
    return new CudaEvent(d, d.eventCreate(2));
  }

  /** The CUevent handle. */
  public long handle() {
    return handle;
  }

  /** Records the event at the current end of {@code stream}. */
  public void record(CudaStream stream) {
    driver.eventRecord(handle, stream.handle());
  }

  /** Waits until the event has happened. */
  public void synchronize() {
    driver.eventSynchronize(handle);
  }

  /** Milliseconds from {@code start} to this event (both recorded and completed). */
  public float millisSince(CudaEvent start) {
    return driver.eventElapsedMillis(start.handle, handle);
  }

  @Override
  public void close() {
    if (!destroyed) {
      destroyed = true;
      driver.eventDestroy(handle);
    }
  }
}
