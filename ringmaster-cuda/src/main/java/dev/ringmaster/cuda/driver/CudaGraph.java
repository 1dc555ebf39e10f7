package dev.ringmaster.cuda.driver;

/** An executable CUDA graph made by stream capture; replays the captured launches in one call. */
public final class CudaGraph implements AutoCloseable {
  private final CudaDriver driver;
  private long graph;
  private final long exec;
  private boolean destroyed;

  private CudaGraph(CudaDriver driver, long graph, long exec) {
    this.driver = driver;
    this.graph = graph;
    this.exec = exec;
  }

  static CudaGraph instantiate(CudaDriver driver, long graph) {
    long exec;
    try {
      exec = driver.graphInstantiate(graph, 0);
    } catch (RuntimeException e) {
      driver.graphDestroy(graph);
      throw e;
    }
    return new CudaGraph(driver, graph, exec);
  }

  /** Queues one replay on {@code stream}. */
  public void launch(CudaStream stream) {
    driver.graphLaunch(exec, stream.handle());
  }

  /**
   * Takes over the launches of {@code other} (same topology, new arguments) without instantiating
   * again; returns false, changing nothing, when the topologies differ. {@code other} stays usable.
   */
  public boolean updateFrom(CudaGraph other) {
    return driver.graphExecUpdate(exec, other.graph);
  }

  @Override
  public void close() {
    if (!destroyed) {
      destroyed = true;
      driver.graphExecDestroy(exec);
      driver.graphDestroy(graph);
      graph = 0;
    }
  }
}
