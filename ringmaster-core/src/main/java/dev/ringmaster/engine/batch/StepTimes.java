package dev.ringmaster.engine.batch;

/**
 * Where the engine's time per step goes, totals since start plus means over the most recent steps.
 * Host time is the engine thread's time between a step's tokens coming back from the model and the
 * next step going in (appending tokens, signalling listeners, retiring requests, finishing the next
 * batch): the model idles during it. Build time is the time spent planning a batch and building its
 * inputs; with the overlap schedule most of it runs while the previous step is on the model.
 *
 * @param steps forward steps run
 * @param overlapped steps whose batch was planned while the previous step ran and used as planned
 * @param hostSeconds total host time
 * @param buildSeconds total batch-building time
 * @param forwardSeconds total time from a step's submission to its tokens coming back
 * @param recentHostMillis mean host time per step over the recent steps
 * @param recentBuildMillis mean batch-building time per step over the recent steps
 * @param recentForwardMillis mean forward time per step over the recent steps
 */
public record StepTimes(
    long steps,
    long overlapped,
    double hostSeconds,
    double buildSeconds,
    double forwardSeconds,
    double recentHostMillis,
    double recentBuildMillis,
    double recentForwardMillis) {

  /** Recent host time as a share of the recent step (host plus forward), 0..1. */
  public double recentHostShare() {
    double step = recentHostMillis + recentForwardMillis;
    return step == 0 ? 0 : recentHostMillis / step;
  }
}
